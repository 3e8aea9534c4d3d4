package preflight

import (
	"fmt"
	"path"
	"strings"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/config"
)

// checkEventTools reports each event whose tool names cannot be met by the
// catalog CheckTools built: a tool effect naming a tool its server does not
// offer (the call would fail at every firing), and an after_tool pattern
// matching no tool the harness is served (the event could never fire;
// hidden tools are not callable by the harness). Events on a server that
// did not start are not judged (failed names them); nor are after_tool
// patterns when any server failed, since its tools are unknown.
func checkEventTools(cfg *config.Config, cat *bridge.Catalog, failed map[string]bool) []config.Problem {
	var out []config.Problem
	for i := range cfg.Events {
		e := &cfg.Events[i]
		key := fmt.Sprintf("events[%d]", i)
		if e.Name != "" {
			key += fmt.Sprintf(" %q", e.Name)
		}
		if t := e.Tool; t != nil && !failed[t.Server] && (cat != nil || len(cfg.Tools) == 0) && !sourceOffers(cat, t.Server, t.Name) {
			out = append(out, config.Problem{Key: key + ".tool", Cause: fmt.Sprintf(
				"tool server %q offers no tool %q (its tools: %s)", t.Server, t.Name, sourceTools(cat, t.Server))})
		}
		if p := e.AfterTool; p != nil && (len(failed) > 0 || cat == nil) && len(cfg.Tools) > 0 {
			out = append(out, config.Problem{Key: key + ".after_tool", Cause: "not checked against the tools: " + uncheckedWhy(cat, failed)})
		} else if p != nil && len(failed) == 0 && !servesMatch(cat, p.Name) {
			why := fmt.Sprintf("name %q matches no tool the harness is served, so the event never fires (served: %s)", p.Name, servedNames(cat))
			if hidden := hiddenMatches(cat, p.Name); len(hidden) > 0 {
				why = fmt.Sprintf("name %q matches only hidden tools (%s), which the harness cannot call, so the event never fires", p.Name, strings.Join(hidden, ", "))
			}
			out = append(out, config.Problem{Key: key + ".after_tool", Cause: why})
		}
	}
	return out
}

// sourceOffers says whether the source named server offers the tool name
// (its own name; hidden tools count: the environment may call them).
func sourceOffers(cat *bridge.Catalog, server, name string) bool {
	if cat == nil {
		return false
	}
	for _, e := range cat.Entries() {
		if e.Source == server && e.Upstream == name {
			return true
		}
	}
	return false
}

// sourceTools lists the tools of the source named server.
func sourceTools(cat *bridge.Catalog, server string) string {
	var names []string
	if cat != nil {
		for _, e := range cat.Entries() {
			if e.Source == server {
				names = append(names, e.Upstream)
			}
		}
	}
	return orNone(names)
}

// servesMatch says whether pattern matches a tool the harness is served.
func servesMatch(cat *bridge.Catalog, pattern string) bool {
	if cat == nil {
		return false
	}
	for _, e := range cat.Served() {
		if ok, _ := path.Match(pattern, e.Served); ok {
			return true
		}
	}
	return false
}

// hiddenMatches lists the hidden tools pattern matches (by the name they
// would be served under).
func hiddenMatches(cat *bridge.Catalog, pattern string) []string {
	var names []string
	if cat != nil {
		for _, e := range cat.Entries() {
			if ok, _ := path.Match(pattern, e.Served); ok && e.Hidden {
				names = append(names, e.Served)
			}
		}
	}
	return names
}

// servedNames lists the tools the harness is served.
func servedNames(cat *bridge.Catalog) string {
	var names []string
	if cat != nil {
		for _, e := range cat.Served() {
			names = append(names, e.Served)
		}
	}
	return orNone(names)
}

// orNone joins names, or says none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
