package agents

import (
	"fmt"
	"maps"
	"strings"

	"github.com/harnessd/harnessd/harness"
)

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// Dir is the agents directory (see AgentsDir): empty means
	// $HARNESSD_AGENTS_DIR.
	Dir string
	// PATH is searched after Dir; empty means the daemon's PATH.
	PATH string
}

// Apply fills h (the harness section of a configuration) from the preset
// of c that harness.agent names, before the configuration is normalized,
// and returns that preset. Without harness.agent it does nothing and
// returns nil. A program that cannot be found is an error returned beside
// the preset (the rest of h is filled). The caller applies the preset's model dialect to the model
// upstream (config.ModelConfig.UsePresetDialect).
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
//
// Apply is idempotent.
func (c *Catalog) Apply(h *harness.Config, opts ApplyOptions) (*Preset, error) {
	if h.Agent == "" {
		return nil, nil
	}
	p, ok := c.Lookup(h.Agent)
	if !ok {
		return nil, fmt.Errorf("unknown agent %q (presets: %s; see harnessd agents)", h.Agent, strings.Join(c.Names(), ", "))
	}
	switch h.Adapter {
	case "", p.Adapter, p.AdapterName():
		h.Adapter = p.AdapterName()
	default:
		return nil, fmt.Errorf("agent %s is driven by adapter %s; harness.adapter %q conflicts with it", p.Name, p.Adapter, h.Adapter)
	}
	if len(h.Command) == 0 {
		dir := AgentsDir(opts.Dir)
		in, ok := Locate(p, dir, opts.PATH)
		if !ok {
			return p, notFound(p, dir)
		}
		h.Command = p.Command(in.Path)
	}
	if len(p.Options) > 0 {
		merged := maps.Clone(p.Options)
		maps.Copy(merged, h.Options)
		h.Options = merged
	}
	if len(h.BuiltinTools) == 0 {
		h.BuiltinTools = append([]string(nil), p.BuiltinTools...)
	}
	return p, nil
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
