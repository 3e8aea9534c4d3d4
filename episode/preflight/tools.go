// Package preflight owns what harnessd validate checks by starting things
// before any episode: every configured tool server, started as a reset
// would start it, its tools listed and the catalog built. It must not keep
// anything running: what it starts it stops before it returns.
package preflight

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/rubric"
)

// CheckTools starts every tool server of cfg (as reset does, per-episode
// ones included), lists their tools, builds the catalog the harness would
// get (hiding and conflict rules applied), and reports each server that
// does not start or list its tools, a catalog conflict, each tool rubric
// naming a tool that no server offers, and each event naming a tool that
// cannot be met (checkEventTools). A server whose program
// CheckPrograms rejects is neither started nor reported again. Everything it
// starts is stopped before it returns. Call it on a normalized Config.
func CheckTools(ctx context.Context, cfg *config.Config, sup *process.Supervisor, log *slog.Logger) []config.Problem {
	if log == nil {
		log = slog.Default()
	}
	var out []config.Problem
	var started []bridge.Source
	failed := map[string]bool{}
	defer func() {
		for _, src := range started {
			src.Close(context.WithoutCancel(ctx))
		}
	}()
	for i, tc := range cfg.Tools {
		if len(tc.Command) > 0 && config.CheckProgram(tc.Command[0], tc.Env, tc.Dir) != "" {
			failed[tc.Name] = true // CheckPrograms reports it
			continue
		}
		src := episode.NewToolSource(tc, cfg.Harness.StopGrace.D(), sup, log, nil) // the operator's check, no episode data
		key := fmt.Sprintf("tools[%d] (tool server %q)", i, tc.Name)
		if err := src.Start(ctx); err != nil {
			out = append(out, config.Problem{Key: key, Cause: "does not start: " + err.Error()})
			failed[tc.Name] = true
			src.Close(context.WithoutCancel(ctx))
			continue
		}
		started = append(started, src)
		if _, err := src.Tools(ctx); err != nil {
			out = append(out, config.Problem{Key: key, Cause: "does not list its tools: " + err.Error()})
			failed[tc.Name] = true
		}
	}
	var cat *bridge.Catalog
	var usable []bridge.Source
	for _, src := range started {
		if !failed[src.Name()] {
			usable = append(usable, src)
		}
	}
	if len(usable) > 0 {
		var err error
		cat, err = bridge.NewCatalog(ctx, usable, bridge.CatalogOptions{
			Builtins: cfg.Harness.BuiltinTools, Expose: cfg.Expose, Hide: cfg.Hide,
		})
		if err != nil {
			out = append(out, config.Problem{Key: "tools", Cause: err.Error()})
		}
	}
	for i, r := range cfg.Rubrics {
		if r.Type != rubric.KindTool {
			continue
		}
		if cat != nil {
			if _, ok := cat.Lookup(r.Tool); ok {
				continue
			}
		}
		key := fmt.Sprintf("rubrics[%d].tool (rubric %q)", i, r.Name)
		switch {
		case len(cfg.Tools) == 0:
			out = append(out, config.Problem{Key: key, Cause: fmt.Sprintf("names tool %q but no tool servers are configured", r.Tool)})
		case len(failed) > 0:
			out = append(out, config.Problem{Key: key, Cause: fmt.Sprintf("names tool %q, which no tool server that started offers (%d did not start)", r.Tool, len(failed))})
		default:
			out = append(out, config.Problem{Key: key, Cause: fmt.Sprintf("names tool %q, which no tool server offers (tools: %s)", r.Tool, toolNames(cat))})
		}
	}
	out = append(out, checkPatterns(cfg, cat, failed)...)
	return append(out, checkEventTools(cfg, cat, failed)...)
}

// toolNames lists a catalog's tools, hidden ones included.
func toolNames(cat *bridge.Catalog) string {
	var names []string
	if cat != nil {
		for _, e := range cat.Entries() {
			names = append(names, e.Served)
		}
	}
	return orNone(names)
}

// MappingCheck is what CheckMappings found.
type MappingCheck struct {
	// Mismatches has one problem per difference between the two servers
	// of a mapped entry, naming the tool and the field.
	Mismatches []config.Problem
	// Unreachable has one problem per side that did not start or list its
	// tools (a production service out of reach of a training cluster,
	// say); its entry was not compared.
	Unreachable []Unreachable
	// Uncompared names the mapped entries (by tool server name) that were
	// not compared because a side was unreachable.
	Uncompared []string
}

// Unreachable is a side of a mapped entry that did not start or list its
// tools.
type Unreachable struct {
	config.Problem
	// Side is which: config.ModeSimulation or config.ModeProduction.
	Side string
}

// CheckMappings starts both servers of every mapped tool entry of cfg
// (simulation: and production:), lists their tools, and compares them: the
// same tools under the same names and schemas. Like CheckTools it runs the
// servers as the operator's check, on no episode's data, and stops
// everything it started before it returns.
func CheckMappings(ctx context.Context, cfg *config.Config, sup *process.Supervisor, log *slog.Logger) MappingCheck {
	if log == nil {
		log = slog.Default()
	}
	var out MappingCheck
	for _, m := range cfg.Mappings() {
		tc := cfg.Tools[m.Index]
		key := fmt.Sprintf("tools[%d] (tool server %q)", m.Index, m.Name)
		var lists [2][]bridge.Tool
		ok := true
		for i, side := range []string{config.ModeSimulation, config.ModeProduction} {
			tools, err := listSide(ctx, tc.WithSide(side), cfg, sup, log)
			if err != nil {
				out.Unreachable = append(out.Unreachable, Unreachable{Side: side,
					Problem: config.Problem{Key: key, Cause: fmt.Sprintf("%s server (%s): %v", side, tc.Side(side).Describe(), err)}})
				ok = false
				continue
			}
			lists[i] = tools
		}
		if !ok {
			out.Uncompared = append(out.Uncompared, m.Name)
			continue
		}
		for _, d := range bridge.CompareTools(lists[0], lists[1]) {
			out.Mismatches = append(out.Mismatches, config.Problem{Key: key, Cause: "simulation and production differ: " + d.Describe(config.ModeSimulation, config.ModeProduction)})
		}
	}
	return out
}

// listSide starts one server of a mapped entry, lists its tools and stops it.
func listSide(ctx context.Context, tc config.ToolConfig, cfg *config.Config, sup *process.Supervisor, log *slog.Logger) ([]bridge.Tool, error) {
	if len(tc.Command) > 0 {
		if cause := config.CheckProgram(tc.Command[0], tc.Env, tc.Dir); cause != "" {
			return nil, fmt.Errorf("%s", cause)
		}
	}
	src := episode.NewToolSource(tc, cfg.Harness.StopGrace.D(), sup, log, nil) // the operator's check, no episode data
	defer src.Close(context.WithoutCancel(ctx))
	if err := src.Start(ctx); err != nil {
		return nil, fmt.Errorf("does not start: %w", err)
	}
	tools, err := src.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("does not list its tools: %w", err)
	}
	return tools, nil
}

// CheckMappingsAtStart is serve's and run's start-up check of the mapped
// tool entries (CheckMappings): one "refusing to start" error per
// difference; a side out of reach (production from a training cluster,
// say) is logged as a warning and not compared.
func CheckMappingsAtStart(ctx context.Context, cfg *config.Config, sup *process.Supervisor, log *slog.Logger) []error {
	if len(cfg.Mappings()) == 0 {
		return nil
	}
	if log == nil {
		log = slog.Default()
	}
	check := CheckMappings(ctx, cfg, sup, log)
	for _, p := range check.Unreachable {
		log.Warn("a mapped tool entry's servers were not compared: one cannot be reached", "problem", p.String())
	}
	var out []error
	for _, p := range check.Mismatches {
		out = append(out, fmt.Errorf("refusing to start: %s", p))
	}
	return out
}
