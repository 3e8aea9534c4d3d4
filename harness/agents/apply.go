package agents

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/harnessd/harnessd/harness"
)

// OrchestrationTokenEnv is the daemon variable holding harnessd's own API
// token; it can never be a model key.
const OrchestrationTokenEnv = harness.OrchestrationTokenEnv

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// Dir is the agents directory (see AgentsDir): empty means
	// $HARNESSD_AGENTS_DIR.
	Dir string
	// PATH is searched after Dir; empty means the daemon's PATH.
	PATH string
	// LookupEnv reads the daemon's environment (for model.api_key_env);
	// nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Apply fills cfg from the preset of c its harness.agent names, before
// Config.Normalize. Without harness.agent it does nothing.
//
//   - harness.adapter becomes the preset's wrapping adapter "agent:NAME". A
//     configured adapter must be empty, that name, or the preset's inner
//     adapter.
//   - harness.command, if empty, becomes the located program followed by the
//     preset's arguments; a configured command is used as it is (it must be
//     complete). A program that cannot be found is an error saying where it
//     was looked for and how to install it.
//   - harness.options: the preset's options, with the configured keys
//     winning key by key.
//   - harness.builtin_tools, if empty, become the preset's.
//   - harness.model is checked: an http(s) url, and an api_key_env that is
//     set in the daemon's environment; a passthrough upstream without a
//     dialect gets the preset's (the agent's own API).
//
// Apply is idempotent.
func (c *Catalog) Apply(cfg *harness.Config, opts ApplyOptions) error {
	h := &cfg.Harness
	if h.Agent == "" {
		return nil
	}
	p, ok := c.Lookup(h.Agent)
	if !ok {
		return fmt.Errorf("unknown agent %q (presets: %s; see harnessd agents)", h.Agent, strings.Join(c.Names(), ", "))
	}
	switch h.Adapter {
	case "", p.Adapter, p.AdapterName():
		h.Adapter = p.AdapterName()
	default:
		return fmt.Errorf("agent %s is driven by adapter %s; harness.adapter %q conflicts with it", p.Name, p.Adapter, h.Adapter)
	}
	var errs []error
	if len(h.Command) == 0 {
		dir := AgentsDir(opts.Dir)
		in, ok := Locate(p, dir, opts.PATH)
		if !ok {
			errs = append(errs, notFound(p, dir))
		} else {
			h.Command = p.Command(in.Path)
		}
	}
	if len(p.Options) > 0 {
		merged := maps.Clone(p.Options)
		maps.Copy(merged, h.Options)
		h.Options = merged
	}
	if len(h.BuiltinTools) == 0 {
		h.BuiltinTools = append([]string(nil), p.BuiltinTools...)
	}
	if h.Model.Dialect == "" && h.Model.URL != "" && h.Model.UpstreamKind() == harness.ModelUpstreamPassthrough {
		h.Model.Dialect = p.Dialect
	}
	if _, err := NormalizeModelURL(h.Model.URL); err != nil {
		errs = append(errs, fmt.Errorf("harness.model.url: %w", err))
	}
	if k := h.Model.APIKeyEnv; k == OrchestrationTokenEnv {
		errs = append(errs, fmt.Errorf("harness.model.api_key_env: %s is harnessd's own API token and never reaches a harness", k))
	} else if k != "" {
		lookup := opts.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		if v, ok := lookup(k); !ok || v == "" {
			errs = append(errs, fmt.Errorf("harness.model.api_key_env: %s is not set in harnessd's environment", k))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("agent %s: %w", p.Name, err)
	}
	return nil
}

// notFound explains a program that Locate did not find.
func notFound(p *Preset, dir string) error {
	where := "on PATH"
	if dir != "" {
		where = fmt.Sprintf("in %s (agents dir) or on PATH", dir)
	} else {
		where += fmt.Sprintf(" (no agents dir: set --agents-dir or $%s)", DirEnvVar)
	}
	hint := ""
	switch {
	case p.Package != "" && p.Version != "":
		hint = fmt.Sprintf("; install it with `npm install %s@%s` (then --agents-dir DIR/node_modules/.bin), or run `make agents`", p.Package, p.Version)
	case p.Package != "":
		hint = fmt.Sprintf("; install it with `npm install %s`", p.Package)
	}
	return fmt.Errorf("%s (%s) not found %s%s", p.Program, p.Title, where, hint)
}
