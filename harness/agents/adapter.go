package agents

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"strings"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Factory makes the wrapping adapter of preset p, to be added to a
// harness.Registry as p.AdapterName(). Its inner adapter (p.Adapter: acp or
// claude) is made from inner, normally the same registry.
func Factory(p *Preset, inner *harness.Registry) harness.AdapterFactory {
	return func(cfg *harness.Config) (harness.Adapter, error) {
		if len(cfg.Command) == 0 {
			return nil, fmt.Errorf("agent %s: no harness command (agents.Apply locates the program)", p.Name)
		}
		opts := mergedOptions(p, cfg.Options)
		innerCfg := *cfg
		innerCfg.Adapter = p.Adapter
		innerCfg.Options = opts
		in, err := inner.New(&innerCfg)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", p.Name, err)
		}
		return &Adapter{preset: p, inner: in, opts: opts,
			userEnv: maps.Clone(cfg.Env), passEnv: append([]string(nil), cfg.PassEnv...)}, nil
	}
}

// mergedOptions returns the preset's options overlaid with the
// configuration's.
func mergedOptions(p *Preset, cfg map[string]any) map[string]any {
	if len(p.Options) == 0 {
		return cfg
	}
	m := maps.Clone(p.Options)
	maps.Copy(m, cfg)
	return m
}

// Adapter is a preset's wrapping adapter ("agent:NAME"): Start prepares the
// episode for the agent and delegates to the inner adapter; every other
// method delegates unchanged.
type Adapter struct {
	preset  *Preset
	inner   harness.Adapter
	opts    map[string]any
	userEnv map[string]string
	passEnv []string

	// The episode of the last Start and the message of its last turn
	// (for Preset.ForkSettle). The session serialises Start, Turn and
	// ForkState.
	ep   *Episode
	last string
}

// Preset returns the adapter's preset.
func (a *Adapter) Preset() *Preset { return a.preset }

// Inner returns the adapter that speaks the agent's protocol.
func (a *Adapter) Inner() harness.Adapter { return a.inner }

// Start prepares the episode (Prepare) and starts the agent through the
// inner adapter. A preparation failure is a startup_failed Failure, and so
// is a Launch.Fork for a preset without a fork mechanism (Preset.Fork).
func (a *Adapter) Start(ctx context.Context, l *harness.Launch) error {
	if l.Fork != nil && a.preset.Fork == "" {
		return harness.Fail(wire.FailureStartupFailed, "agent %s cannot continue from a fork state: %s", a.preset.Name, a.preset.ForkNote)
	}
	ll, e, err := a.prepare(l)
	if err != nil {
		return harness.Wrap(wire.FailureStartupFailed, err, "agent %s: prepare the episode", a.preset.Name)
	}
	a.ep, a.last = e, ""
	return a.inner.Start(ctx, ll)
}

// Prepare runs the preset's setup for the episode of l and returns the
// Launch the inner adapter gets: the environment extended with the preset's
// variables (those the configuration sets win), the command extended with
// its arguments, and the merged options.
func (a *Adapter) Prepare(l *harness.Launch) (*harness.Launch, error) {
	ll, _, err := a.prepare(l)
	return ll, err
}

// prepare is Prepare, also returning the prepared episode.
func (a *Adapter) prepare(l *harness.Launch) (*harness.Launch, *Episode, error) {
	e, err := a.episode(l)
	if err != nil {
		return nil, nil, err
	}
	ll := *l
	ll.Options = a.opts
	ll.Command = append(append([]string(nil), l.Command...), e.args...)
	ll.Env = mergeEnv(l.Env, e.env, a.userSet(l.Env))
	return &ll, e, nil
}

// episode runs the common and the preset's setup.
func (a *Adapter) episode(l *harness.Launch) (*Episode, error) {
	m := resolveModel(a.preset, l)
	e := &Episode{Home: l.Home, Workspace: l.Workspace, Dir: l.Dir(), Model: m, MCP: l.MCP, Root: os.Geteuid() == 0}
	if err := commonSetup(e); err != nil {
		return nil, err
	}
	if a.preset.Setup != nil {
		if err := a.preset.Setup(e); err != nil {
			return nil, err
		}
	}
	if l.Fork != nil && a.preset.Resume != nil {
		if err := a.preset.Resume(e, l.Fork); err != nil {
			return nil, fmt.Errorf("resume the parent's session: %w", err)
		}
	}
	return e, nil
}

// resolveModel turns the launch's model access into a Model. The session
// sets it to the episode's model gateway and its per-episode key; the real
// key never reaches a preset.
func resolveModel(p *Preset, l *harness.Launch) Model {
	m := Model{Root: l.Model.Root, Name: l.Model.Name}
	if m.Name == "" && m.Root != "" {
		m.Name = p.DefaultModel
	}
	switch {
	case l.Model.Key != "":
		m.Key = l.Model.Key
	case m.Root != "":
		m.Key = PlaceholderKey
	}
	return m
}

// commonSetup gives every agent private XDG directories under its HOME and
// turns off the conventional telemetry and update notifiers.
func commonSetup(e *Episode) error {
	for _, d := range []struct{ name, rel string }{
		{"XDG_CONFIG_HOME", ".config"},
		{"XDG_DATA_HOME", ".local/share"},
		{"XDG_STATE_HOME", ".local/state"},
		{"XDG_CACHE_HOME", ".cache"},
	} {
		if err := e.MkdirAll(d.rel); err != nil {
			return err
		}
		e.Setenv(d.name, e.Path(d.rel))
	}
	e.Setenv("DO_NOT_TRACK", "1")
	e.Setenv("NO_UPDATE_NOTIFIER", "1")
	return nil
}

// userSet returns the names of env the configuration chose: harness.env
// keys and the variables passed with harness.pass_env.
func (a *Adapter) userSet(env []string) map[string]bool {
	set := map[string]bool{}
	for k := range a.userEnv {
		set[k] = true
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		for _, pat := range a.passEnv {
			if ok, _ := path.Match(pat, name); ok {
				set[name] = true
			}
		}
	}
	return set
}

// mergeEnv sets add on top of env, except the names in keep, and returns
// the result sorted without duplicates.
func mergeEnv(env []string, add map[string]string, keep map[string]bool) []string {
	set := map[string]string{}
	for k, v := range add {
		if !keep[k] {
			set[k] = v
		}
	}
	// Environ with an allow-all pattern keeps every variable of env.
	return process.Environ(env, []string{"*"}, set)
}

// ForkState implements harness.Forker: with a preset that builds a fork
// mechanism (Preset.Fork) it asks the inner adapter; otherwise it returns
// an error wrapping harness.ErrForkUnsupported that says what the agent
// would offer (Preset.ForkNote).
func (a *Adapter) ForkState(ctx context.Context) (*harness.ForkState, error) {
	f, ok := a.inner.(harness.Forker)
	if a.preset.Fork == "" || !ok {
		note := a.preset.ForkNote
		if note == "" {
			note = "no fork mechanism of its own is built"
		}
		return nil, fmt.Errorf("agent %s: %s: %w", a.preset.Name, note, harness.ErrForkUnsupported)
	}
	fs, err := f.ForkState(ctx)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", a.preset.Name, err)
	}
	if a.preset.ForkSettle != nil && a.ep != nil {
		if err := a.preset.ForkSettle(ctx, a.ep, fs, a.last); err != nil {
			return nil, fmt.Errorf("agent %s: %w", a.preset.Name, err)
		}
	}
	return fs, nil
}

var _ harness.Forker = (*Adapter)(nil)

// Turn delegates to the inner adapter.
func (a *Adapter) Turn(ctx context.Context, in harness.TurnInput, emit func(wire.Event)) (harness.TurnResult, error) {
	a.last = in.Message
	return a.inner.Turn(ctx, in, emit)
}

// Interrupt delegates to the inner adapter.
func (a *Adapter) Interrupt(ctx context.Context) error { return a.inner.Interrupt(ctx) }

// Stop delegates to the inner adapter.
func (a *Adapter) Stop(ctx context.Context) error { return a.inner.Stop(ctx) }

// Alive delegates to the inner adapter.
func (a *Adapter) Alive() bool { return a.inner.Alive() }

// Diagnostics delegates to the inner adapter.
func (a *Adapter) Diagnostics() (*process.ExitStatus, string, int) { return a.inner.Diagnostics() }
