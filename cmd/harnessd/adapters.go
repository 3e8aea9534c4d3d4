package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/acp"
	"github.com/harnessd/harnessd/harness/adapter/jsonl"
	"github.com/harnessd/harnessd/harness/adapter/oneshot"
	"github.com/harnessd/harnessd/harness/adapter/pty"
	"github.com/harnessd/harnessd/harness/adapter/streamjson"
	"github.com/harnessd/harnessd/harness/agents"
)

// This file is the one place that says which harness protocols and agent
// presets the binary links. Configurations name them (harness.adapter,
// harness.agent, --adapter, --agent); nothing registers itself.

// protocolAdapter is a harness protocol adapter the binary links.
type protocolAdapter struct {
	name    string
	factory harness.AdapterFactory
}

// linkedAdapters are the harness protocols, one adapter package each.
func linkedAdapters() []protocolAdapter {
	return []protocolAdapter{
		{jsonl.Name, jsonl.Factory},
		{acp.Name, acp.Factory},
		{streamjson.Name, streamjson.Factory},
		{oneshot.Name, oneshot.Factory},
		{pty.Name, pty.Factory},
	}
}

// linkedPresets are the known agents; each gets a wrapping adapter
// "agent:NAME" over its protocol adapter.
func linkedPresets() []*agents.Preset {
	return []*agents.Preset{
		agents.ClaudeCode(),
		agents.ClaudeACP(),
		agents.Codex(),
		agents.Copilot(),
		agents.Gemini(),
		agents.Goose(),
		agents.OpenCode(),
		agents.Qwen(),
	}
}

// extensions is what configurations are turned into adapters with: the
// adapter registry handed to sessions and the server, and the preset
// catalog that harness.agent names.
type extensions struct {
	adapters *harness.Registry
	presets  *agents.Catalog
}

// link builds the registry and the catalog from the lists above.
func link(adapters []protocolAdapter, presets []*agents.Preset) (*extensions, error) {
	x := &extensions{adapters: &harness.Registry{}, presets: &agents.Catalog{}}
	var errs []error
	for _, a := range adapters {
		errs = append(errs, x.adapters.Add(a.name, a.factory))
	}
	for _, p := range presets {
		if err := x.presets.Add(p); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, x.adapters.Add(p.AdapterName(), agents.Factory(p, x.adapters)))
	}
	if err := errors.Join(errs...); err != nil {
		return x, fmt.Errorf("linking adapters and presets: %w", err)
	}
	return x, nil
}

// linked returns the binary's extensions, built once. An error means the
// lists above are inconsistent (a name twice); what was built is still
// returned for help texts.
var linked = sync.OnceValues(func() (*extensions, error) {
	return link(linkedAdapters(), linkedPresets())
})

// applyPreset fills cfg's harness section from the preset its
// harness.agent names (agents.Catalog.Apply), gives a passthrough model
// upstream the preset's dialect, and checks that the model key's variable
// is set in the daemon's environment. Without harness.agent it changes
// nothing, and checks the key.
func applyPreset(presets *agents.Catalog, cfg *config.Config, opts agents.ApplyOptions) error {
	p, err := presets.Apply(&cfg.Harness.Config, opts)
	if p == nil && err != nil {
		return err
	}
	// Each problem is one (a line of its own, named by its own key): the
	// model's were joined under the agent's, their lines after the first
	// without the command's or the file's prefix.
	var ps problems
	if p != nil {
		cfg.Harness.Model.UsePresetDialect(p.Dialect)
		if err != nil {
			ps = append(ps, fmt.Errorf("agent %s: %w", p.Name, err))
		}
	}
	// Without a preset too: an unset key's variable failed every reset
	// instead of the start.
	if err := cfg.Harness.Model.CheckKey(nil); err != nil {
		ps = append(ps, err)
	}
	if p != nil {
		if _, perr := config.ParseModelEndpoint(cfg.Harness.Model.URL); perr != nil {
			ps = append(ps, fmt.Errorf("harness.model.url: %w", perr))
		}
	}
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// buildAdapter builds the harness's adapter as a reset would. An adapter
// name the registry does not know is named by its knob, with the protocols
// it could be: the registry listed its every name, the presets' wrapping
// ones ("agent:gemini") among them, and no knob.
func buildAdapter(r *harness.Registry, hc *harness.Config) error {
	if hc.Adapter != "" && !slices.Contains(r.Names(), hc.Adapter) {
		return fmt.Errorf("harness.adapter (--adapter) %q is not a harness protocol: want %s; an agent preset is harness.agent (--agent), listed by harnessd agents",
			hc.Adapter, strings.Join(protocolAdapters(r), ", "))
	}
	_, err := r.New(hc)
	return err
}
