package preflight

import (
	"fmt"
	"slices"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/config"
)

// checkPatterns reports each expose or hide pattern that matches no tool
// of the servers that started: an expose pattern that matches nothing
// serves nothing (all of them matching nothing, no tool at all), and a
// hide pattern that matches nothing hides nothing (a misspelt grader's
// name leaves the grader callable by the harness). Not judged when a
// server failed: its tools are unknown.
func checkPatterns(cfg *config.Config, cat *bridge.Catalog, failed map[string]bool) []config.Problem {
	if cat == nil || len(failed) > 0 {
		if len(cfg.Expose)+len(cfg.Hide) == 0 || len(cfg.Tools) == 0 {
			return nil
		}
		return []config.Problem{{Key: "expose, hide", Cause: "not checked against the tools: " + uncheckedWhy(cat, failed)}}
	}
	var out []config.Problem
	for _, list := range []struct {
		key      string
		patterns []string
		effect   string
	}{{"expose", cfg.Expose, "serves nothing"}, {"hide", cfg.Hide, "hides nothing"}} {
		for i, p := range list.patterns {
			if !matchesAnyTool(cat, p) {
				out = append(out, config.Problem{Key: fmt.Sprintf("%s[%d]", list.key, i), Cause: fmt.Sprintf(
					"pattern %q matches no tool of the tool servers, so it %s (tools: %s)", p, list.effect, allNames(cat))})
			}
		}
	}
	return out
}

// uncheckedWhy says why the tools could not be known: servers that did not
// start or list their tools, else a catalog that could not be built.
func uncheckedWhy(cat *bridge.Catalog, failed map[string]bool) string {
	if len(failed) > 0 {
		return fmt.Sprintf("%d tool server(s) did not start or list their tools", len(failed))
	}
	return "the tool catalog could not be built (see tools)"
}

// matchesAnyTool says whether pattern matches a tool of cat as the
// catalog matches expose and hide (bridge.Entry.Matches).
func matchesAnyTool(cat *bridge.Catalog, pattern string) bool {
	return slices.ContainsFunc(cat.Entries(), func(e bridge.Entry) bool { return e.Matches(pattern) })
}

// allNames lists every tool of cat by its served name, hidden ones too.
func allNames(cat *bridge.Catalog) string {
	var names []string
	for _, e := range cat.Entries() {
		names = append(names, e.Served)
	}
	return orNone(names)
}
