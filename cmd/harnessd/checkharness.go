package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/termtext"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/wire"
)

// harnessProbe is `harnessd check [--adapter A] -- CMD ARGS...`: it starts
// the harness once in a probe sandbox, as a reset would, and reports what
// the sandbox bound back for it to run and, when it did not start, what it
// needed and could not see (the hidden paths its error names, and the
// knobs that change that).
type harnessProbe struct {
	adapter  string
	startup  time.Duration
	readOnly []string
}

// run probes cmd and writes the report to w; the exit code is 0 when the
// harness started, 1 when it did not, 3 when no sandbox can be made here.
func (p *harnessProbe) run(ctx context.Context, w io.Writer, log *slog.Logger, cmd []string) int {
	if r := sandbox.Probe(ctx, ""); !r.OK {
		fmt.Fprintf(w, "harness probe: no sandbox can be made on this machine (%s); in process isolation the harness sees the host as it is\n", r.Detail)
		return exitMissing
	}
	root, err := os.MkdirTemp("", "harnessd-probe-")
	if err != nil {
		fmt.Fprintln(w, "harness probe:", err)
		return exitFailure
	}
	defer os.RemoveAll(root)
	cfg := &config.Config{Name: "probe", Isolation: config.IsolationSandbox,
		Harness:   config.HarnessConfig{Config: harness.Config{Adapter: p.adapter, Command: cmd, StartupTimeout: units.Duration(p.startup)}},
		Workspace: config.WorkspaceConfig{Root: root}, Sandbox: config.SandboxConfig{ReadOnly: p.readOnly}}
	if err := cfg.Normalize(); err != nil {
		fmt.Fprintln(w, "harness probe:", err)
		return exitUsage
	}
	x, err := linked()
	if err != nil {
		fmt.Fprintln(w, "harness probe:", err)
		return exitFailure
	}
	a, err := x.adapters.New(&cfg.Harness.Config)
	if err != nil {
		fmt.Fprintln(w, "harness probe:", err)
		return exitUsage
	}
	sup, err := process.NewSupervisor(process.Options{Logger: log})
	if err != nil {
		fmt.Fprintln(w, "harness probe:", err)
		return exitFailure
	}
	defer sup.Close(context.Background(), 0)
	env := &episode.Env{Config: cfg, Supervisor: sup, Isolation: config.IsolationSandbox, Dir: root + "/session", Logger: log}
	if err := env.Init(); err != nil {
		fmt.Fprintln(w, "harness probe:", err)
		return exitFailure
	}
	// The episode's disk goes back to the env when it closes (kept for a
	// next episode): unmounted here, or every probe left one mounted.
	defer env.ReleaseDir()
	binds, covers, err := env.Exposures()
	fmt.Fprintf(w, "harness: %s (adapter %s)\n", strings.Join(cmd, " "), cfg.Harness.Adapter)
	if err != nil {
		fmt.Fprintf(w, "what it needs to run could not be resolved: %v\n", err)
	}
	fmt.Fprintf(w, "bound back read-only for it to run (%d):\n", len(binds))
	for _, b := range binds {
		fmt.Fprintf(w, "  %s\n", b)
	}
	for _, c := range covers {
		fmt.Fprintf(w, "  (%s is covered with an empty directory so that the binds inside it can be reached)\n", c)
	}
	return p.start(ctx, w, env, a)
}

// start opens one episode and starts the harness in it.
func (p *harnessProbe) start(ctx context.Context, w io.Writer, env *episode.Env, a harness.Adapter) int {
	ep, err := episode.Open(ctx, episode.Spec{Env: env, ID: "probe"}, episode.LevelDoors)
	if err != nil {
		fmt.Fprintln(w, "harness probe: the episode could not be opened:", err)
		return exitFailure
	}
	defer ep.Close(context.WithoutCancel(ctx))
	err = ep.StartHarness(ctx, a, ep.Launch())
	if err == nil {
		_, _, pid := a.Diagnostics()
		fmt.Fprintf(w, "started in the sandbox and ready (pid %d): nothing it needed was hidden\n", pid)
		return exitOK
	}
	f, ok := harness.AsFailure(err)
	if !ok {
		f = harness.Wrap(wire.FailureStartupFailed, err, "harness failed to start")
	}
	ep.StopHarness(context.WithoutCancel(ctx))
	exit, tail, _ := a.Diagnostics()
	if f.Exit == nil {
		f.Exit = exit
	}
	if f.StderrTail == "" {
		f.StderrTail = tail
	}
	ep.ExplainSandboxed(f)
	// The message and the tail carry the probed program's own output.
	fmt.Fprintf(w, "did not start in the sandbox: %s\n", termtext.Escape(f.Message))
	if t := strings.TrimSpace(f.StderrTail); t != "" && !strings.Contains(f.Message, t) {
		fmt.Fprintf(w, "stderr tail:\n%s\n", termtext.Lines(t, "  | "))
	}
	return exitFailure
}
