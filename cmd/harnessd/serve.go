package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/probe"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/server"
)

func init() {
	register("serve", "serve an environment over WebSocket and HTTP (OpenEnv protocol)", runServe)
}

// isolationFlags choose the process supervisor's mechanisms.
type isolationFlags struct {
	level             string
	cgroup, subreaper string
	reapOrphans       bool
	killLeftovers     bool
}

func (f *isolationFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.level, "isolation", "auto", "how harnesses are contained: sandbox (own namespaces; refuse to start without), process (the daemon's child), or auto (sandbox where the host allows it; overrides the configuration's isolation:)")
	fs.StringVar(&f.cgroup, "cgroup", "auto", "cgroup v2 leaf per process tree: auto, off, required")
	fs.StringVar(&f.subreaper, "subreaper", "auto", "adopt orphaned descendants: auto, off, required")
	fs.BoolVar(&f.reapOrphans, "reap-orphans", false, "reap every orphan re-parented to the daemon (always on as PID 1)")
	fs.BoolVar(&f.killLeftovers, "kill-leftovers", false, "kill the processes left in the cgroups of gone daemons beside this one before removing them (only where every daemon there is yours)")
}

func parseMode(s string) (process.Mode, error) {
	switch s {
	case "auto", "":
		return process.ModeAuto, nil
	case "off":
		return process.ModeOff, nil
	case "required":
		return process.ModeRequired, nil
	}
	return "", fmt.Errorf("%q: want auto, off or required", s)
}

func (f *isolationFlags) supervisor(log *slog.Logger) (*process.Supervisor, error) {
	cg, err := parseMode(f.cgroup)
	if err != nil {
		return nil, fmt.Errorf("--cgroup %w", err)
	}
	sr, err := parseMode(f.subreaper)
	if err != nil {
		return nil, fmt.Errorf("--subreaper %w", err)
	}
	return process.NewSupervisor(process.Options{Cgroup: cg, Subreaper: sr, ReapOrphans: f.reapOrphans, KillLeftovers: f.killLeftovers, Logger: log})
}

func runServe(args []string) int {
	c := newCLI("serve", "harnessd serve [flags] [-- HARNESS COMMAND ARGS...]\n\n"+
		"Serves one environment over WebSocket and HTTP (OpenEnv's protocol). The harness is --config's\n"+
		"harness.command, an --agent preset, or the command after \"--\". Before listening, serve checks that the\n"+
		"harness program and every tool server command exist and are executable, and exits 2 naming the\n"+
		"one that is not (harnessd validate reports every problem of a configuration).")
	fs := c.fs
	fs.SetInterspersed(false) // "serve ./harness -x": -x is the harness's
	var ef envFlags
	var lf logFlags
	var iso isolationFlags
	var df drainFlags
	df.register(fs)
	ef.register(fs)
	lf.register(fs)
	iso.register(fs)
	listen := fs.String("listen", "127.0.0.1:8000", "`address` to listen on (a container passes :8000)")
	addrFile := fs.String("addr-file", "", "write the bound address to this `file` (for --listen with port 0); a regular file, replaced atomically")
	mode := fs.String("mode", "", "simulation or production (default: $OPENENV_MODE, else simulation)")
	maxSessions := fs.Int("max-sessions", 1, "concurrent sessions")
	var idle, maxFrame, drainFlag string
	durationVar(fs, &idle, "idle-timeout", defaultIdleTimeout, "end sessions that no socket holds (HTTP, /mcp) after this long idle (0: never)")
	tokenFile := fs.String("api-token-file", "", "`file` holding the API token (or set HARNESSD_API_TOKEN)")
	sizeVar(fs, &maxFrame, "max-frame-bytes", "64MiB", "largest accepted WebSocket frame or HTTP body")
	var req requireFlag
	fs.Var(&req, "require", "refuse to start (exit 3) unless these `mechanisms` are verified or available, probed as harnessd check does: "+strings.Join(probe.Names, ", "))
	durationVar(fs, &drainFlag, "drain-timeout", "20s", "on SIGTERM/SIGINT/SIGHUP, how long ending sessions may take before every process tree is killed (keep it below the orchestrator's grace period)")
	if code, done := c.parse(args); done {
		return code
	}
	log, err := lf.logger(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd serve:", err)
		return exitUsage
	}
	raiseNOFILE(log)
	// Handlers first: a signal that arrives while starting up is kept and
	// acted on once serving (as PID 1, one without a handler would be lost,
	// or end the daemon with code 2).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, drainSignals...)
	defer signal.Stop(sigs)
	defer dumpStacksOnQuit(log)()
	cfg, err := ef.build(fs.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd serve:", err)
		return exitUsage
	}
	if code, refused := refuseUnrunnable(c, cfg, fs.NArg() > 0); refused {
		return code
	}
	m := *mode
	if m == "" {
		m = os.Getenv("OPENENV_MODE")
	}
	srvMode, err := server.ParseMode(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd serve:", err)
		return exitUsage
	}
	var idleTimeout time.Duration
	if idle != "" {
		d, err := units.ParseDuration(idle)
		if err != nil {
			fmt.Fprintln(os.Stderr, "harnessd serve: --idle-timeout:", err)
			return exitUsage
		}
		idleTimeout = d.D()
	}
	frame, err := units.ParseByteSize(maxFrame)
	if err != nil || frame <= 0 {
		fmt.Fprintf(os.Stderr, "harnessd serve: --max-frame-bytes %q: want a positive size such as 64MiB\n", maxFrame)
		return exitUsage
	}
	dt, err := units.ParseDuration(drainFlag)
	if err != nil || dt <= 0 {
		fmt.Fprintf(os.Stderr, "harnessd serve: --drain-timeout %q: want a positive duration such as 20s\n", drainFlag)
		return exitUsage
	}
	drainTimeout := dt.D()
	policy, finishTimeout, err := df.options(drainTimeout, cfg.Harness.StopGrace.D())
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd serve:", err)
		return exitUsage
	}
	token, err := apiToken(*tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd serve:", err)
		return exitUsage
	}

	if len(req) > 0 && !requirementsMet(log, &iso, req) {
		return exitMissing
	}
	sup, err := iso.supervisor(log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd serve:", err)
		return exitMissing
	}
	mech := sup.Mechanisms()
	level, err := resolveIsolation(context.Background(), iso.level, cfg, log)
	if err != nil {
		sup.Close(context.Background(), 0)
		fmt.Fprintln(os.Stderr, "harnessd serve:", err)
		return exitMissing
	}
	log.Info("process isolation", "isolation", level, "kill_mode", mech.KillMode(), "peer_check", mech.PeerCheck, "cgroup", mech.CgroupPath, "pid1", mech.PID1, "notes", mech.Notes)
	if n := sandbox.SweepCgroups(); n > 0 {
		log.Info("removed empty sandbox cgroups of daemons no longer running", "count", n)
	}
	// Session directories a killed daemon left behind (workspace.keep keeps
	// them on purpose, so they are not swept then).
	if !cfg.Workspace.Keep {
		if _, err := episode.SweepWorkspaces(cfg.WorkspaceRoot(), log); err != nil {
			log.Warn("could not sweep leftover session directories", "err", err)
		}
	}

	x, err := linked()
	if err != nil {
		sup.Close(context.Background(), 0)
		fmt.Fprintln(os.Stderr, "harnessd serve:", err)
		return exitUsage
	}
	srv, err := server.New(server.Options{
		Config: cfg, Adapters: x.adapters, Mode: srvMode, MaxSessions: *maxSessions, IdleTimeout: idleTimeout,
		APIToken: token, MaxFrameBytes: int64(frame), Supervisor: sup, Logger: log, Version: buildVersion(),
		DrainPolicy: policy, DrainFinishTimeout: finishTimeout,
		Isolation: level, SandboxHide: daemonFiles(ef.config, *tokenFile),
	})
	if err != nil {
		sup.Close(context.Background(), 0)
		fmt.Fprintln(os.Stderr, "harnessd serve:", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		sup.Close(context.Background(), 0)
		fmt.Fprintln(os.Stderr, "harnessd serve:", err)
		return exitFailure
	}
	if *addrFile != "" {
		if err := writeAddrFile(*addrFile, ln.Addr().String()+"\n"); err != nil {
			ln.Close()
			sup.Close(context.Background(), 0)
			fmt.Fprintln(os.Stderr, "harnessd serve: --addr-file:", err)
			return exitFailure
		}
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	code := exitOK
	select {
	case err := <-served:
		log.Error("server stopped", "err", err)
		code = exitFailure
	case sig := <-sigs:
		log.Info("draining", "signal", sig.String(), "drain_timeout", drainTimeout, "drain_policy", policy,
			"sessions", srv.ActiveSessions())
	}
	if c := drain(log, srv, sup, sigs, drainTimeout); c != exitOK {
		code = c
	}
	log.Info("stopped", "exit_code", code, "live_trees", sup.Live())
	return code
}

// requirementsMet probes the required mechanisms (only those) as harnessd
// check would, logs every one that is missing, and reports whether all are
// there. A probe that cannot run counts as missing: serve fails closed.
func requirementsMet(log *slog.Logger, iso *isolationFlags, req []string) bool {
	opts, _, err := iso.checkOptions(log)
	if err == nil {
		var rep *probe.Report
		if rep, err = runChecks(opts, req, false); err == nil {
			for _, n := range rep.Unmet {
				c := rep.Checks[n]
				log.Error("refusing to start: a required mechanism is missing", "mechanism", n, "status", c.Status, "detail", c.Detail)
			}
			if len(rep.Unmet) == 0 {
				log.Info("required mechanisms present", "required", strings.Join(req, ","))
			}
			return len(rep.Unmet) == 0
		}
	}
	log.Error("refusing to start: cannot probe the required mechanisms", "err", err)
	return false
}

// forceWait bounds how long a forced exit waits for the killed trees to be
// reaped and the cgroup directories removed.
const forceWait = 10 * time.Second

// drain turns readiness false, lets running turns finish or cancels them
// (the server's drain policy), ends every session (each harness tree gets
// SIGTERM, its stop grace, then SIGKILL), closes sockets with "going away",
// closes the listener last and closes the supervisor.
// A second signal, or a drain that overruns timeout, kills every tree at once
// and makes the exit code exitFailure.
func drain(log *slog.Logger, srv *server.Server, sup *process.Supervisor, sigs <-chan os.Signal, timeout time.Duration) int {
	// The timer below is the drain's only deadline: a context deadline would
	// let Shutdown and Close return early, and the daemon exit, while trees
	// are still being stopped.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Warn("drain incomplete", "err", err)
		}
		if err := sup.Close(ctx, 0); err != nil && !errors.Is(err, context.Canceled) {
			log.Warn("process supervisor close", "err", err)
		}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
		return exitOK
	case sig := <-sigs:
		log.Error("second signal: killing every process tree and exiting without a full drain", "signal", sig.String())
	case <-timer.C:
		log.Error("drain timed out: killing every process tree", "drain_timeout", timeout)
	}
	// SIGKILL everything, stop waiting for handlers, then give the stops
	// (now quick) a bounded time to sweep escapees and reap.
	sup.Kill()
	cancel()
	fctx, fcancel := context.WithTimeout(context.Background(), forceWait)
	defer fcancel()
	select {
	case <-done:
	case <-fctx.Done():
	}
	if err := sup.Close(fctx, 0); err != nil {
		log.Error("process trees still being stopped; exiting anyway", "err", err)
	}
	return exitFailure
}

// apiToken reads the token from a file or HARNESSD_API_TOKEN (which is then
// removed from the daemon's environment).
func apiToken(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--api-token-file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("--api-token-file %s is empty", file)
		}
		return t, nil
	}
	t := os.Getenv("HARNESSD_API_TOKEN")
	os.Unsetenv("HARNESSD_API_TOKEN")
	return strings.TrimSpace(t), nil
}
