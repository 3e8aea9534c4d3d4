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
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/config"
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
	choiceVar(fs, &f.level, "isolation", "auto", []string{"sandbox", "process", "auto"}, "how harnesses are contained: sandbox (own namespaces; refuse to start without), process (the daemon's child), or auto (sandbox where the host allows it; overrides the configuration's isolation:)")
	modes := []string{"auto", "off", "required"}
	choiceVar(fs, &f.cgroup, "cgroup", "auto", modes, "cgroup v2 leaf per process tree: auto, off, required")
	choiceVar(fs, &f.subreaper, "subreaper", "auto", modes, "adopt orphaned descendants: auto, off, required")
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

// serveFlags are serve's command line: the shared setup flags and the
// server's own.
type serveFlags struct {
	setupFlags
	drain       drainFlags
	listen      string
	addrFile    string
	mode        string
	maxSessions int
	idle        string
	tokenFile   string
	maxFrame    string
	require     requireFlag
	drainAfter  string
}

func (f *serveFlags) register(fs *pflag.FlagSet) {
	f.drain.register(fs)
	f.setupFlags.register(fs)
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8000", "`address` to listen on (a container passes :8000)")
	fs.StringVar(&f.addrFile, "addr-file", "", "write the bound address to this `file` (for --listen with port 0); a regular file, replaced atomically")
	fs.StringVar(&f.mode, "mode", "", "simulation or production, also selecting mapped tool servers (default: $OPENENV_MODE, else the configuration's mode:, else simulation)")
	fs.IntVar(&f.maxSessions, "max-sessions", 1, "concurrent sessions")
	durationVar(fs, &f.idle, "idle-timeout", defaultIdleTimeout, "end sessions that no socket holds (HTTP, /mcp) after this long idle (0: never)")
	fs.StringVar(&f.tokenFile, "api-token-file", "", "`file` holding the API token (or set HARNESSD_API_TOKEN)")
	sizeVar(fs, &f.maxFrame, "max-frame-bytes", "64MiB", "largest accepted WebSocket frame or HTTP body")
	fs.Var(&f.require, "require", "refuse to start (exit 3) unless these `mechanisms` are verified or available, probed as harnessd check does: "+strings.Join(probe.Names, ", "))
	durationVar(fs, &f.drainAfter, "drain-timeout", "20s", "on SIGTERM/SIGINT/SIGHUP, how long ending sessions may take before every process tree is killed (keep it below the orchestrator's grace period)")
}

// serverOptions are the server's options that the flags alone decide.
func (f *serveFlags) serverOptions() (server.Options, error) {
	m, from := modeFrom(f.mode)
	mode, err := server.ParseMode(m)
	if err != nil {
		return server.Options{}, fmt.Errorf("%s: %w", from, err)
	}
	if f.maxSessions < 1 {
		// The server would take it as its default of 1: a typo'd 0 or -8
		// would serve one session where the operator asked otherwise.
		return server.Options{}, fmt.Errorf("--max-sessions %d: want at least 1 (the sessions served at once)", f.maxSessions)
	}
	idle, err := units.ParseDuration(f.idle)
	if err != nil {
		return server.Options{}, fmt.Errorf("--idle-timeout: %w", err)
	}
	frame, err := units.ParseByteSize(f.maxFrame)
	if err != nil || frame <= 0 {
		return server.Options{}, fmt.Errorf("--max-frame-bytes %q: want a positive size such as 64MiB", f.maxFrame)
	}
	token, err := apiToken(f.tokenFile, true)
	if err != nil {
		return server.Options{}, err
	}
	return server.Options{Mode: mode, MaxSessions: f.maxSessions, IdleTimeout: idle.D(), APIToken: token,
		MaxFrameBytes: int64(frame), Version: buildVersion()}, nil
}

// modeFrom is the mode --mode gives (flag), else $OPENENV_MODE, and which
// of the two gave it, for the messages about it.
func modeFrom(flag string) (mode, from string) {
	if flag != "" {
		return flag, "--mode"
	}
	if m := os.Getenv("OPENENV_MODE"); m != "" {
		return m, "$OPENENV_MODE"
	}
	return "", ""
}

// applyMode: --mode (or $OPENENV_MODE) selects the mapped tool servers;
// without either, the configuration's mode: is the server's.
func (f *serveFlags) applyMode(cfg *config.Config, opts *server.Options) (err error) {
	if f.mode != "" || os.Getenv("OPENENV_MODE") != "" {
		return cfg.SetMode(string(opts.Mode))
	}
	opts.Mode, err = server.ParseMode(cfg.EffectiveMode())
	return err
}

// drainTimeout is --drain-timeout.
func (f *serveFlags) drainTimeout() (time.Duration, error) {
	d, err := units.ParseDuration(f.drainAfter)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--drain-timeout %q: want a positive duration such as 20s", f.drainAfter)
	}
	return d.D(), nil
}

func runServe(args []string) int {
	c := newCLI("serve", "harnessd serve [flags] [-- HARNESS COMMAND ARGS...]\n\n"+
		"Serves one environment over WebSocket and HTTP (OpenEnv's protocol). The harness is --config's\n"+
		"harness.command, an --agent preset, or the command after \"--\". Before listening, serve checks that the\n"+
		"harness program and every tool server command exist and are executable, and exits 2 naming the\n"+
		"one that is not (harnessd validate reports every problem of a configuration).")
	c.fs.SetInterspersed(false) // "serve ./harness -x": -x is the harness's
	var f serveFlags
	f.register(c.fs)
	if code, done := c.parse(args); done {
		return code
	}
	log, err := f.logger()
	if err != nil {
		return c.exit(err)
	}
	raiseNOFILE(log)
	// Handlers first: a signal that arrives while starting up is kept and
	// acted on once serving (as PID 1, one without a handler would be lost,
	// or end the daemon with code 2).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, drainSignals...)
	defer signal.Stop(sigs)
	defer dumpStacksOnQuit(log)()
	return serve(c, log, &f, sigs)
}

// serve starts the daemon, serves until a signal and drains, and returns
// the exit code.
func serve(c *cli, log *slog.Logger, f *serveFlags, sigs <-chan os.Signal) int {
	opts, err := f.serverOptions()
	if err != nil {
		return c.exit(withCode(exitUsage, err))
	}
	drainTimeout, err := f.drainTimeout()
	if err != nil {
		return c.exit(withCode(exitUsage, err))
	}
	args, err := c.harnessArgs()
	if err != nil {
		return c.exit(withCode(exitUsage, err))
	}
	d, err := f.setup(context.Background(), log, setupOptions{args: args, require: f.require,
		adjust: func(cfg *config.Config) error { return f.applyMode(cfg, &opts) }})
	if err != nil {
		return c.exit(err)
	}
	sweepLeftovers(log, d.cfg)
	srv, ln, err := f.start(log, d, &opts, drainTimeout)
	if err != nil {
		d.sup.Close(context.Background(), 0)
		return c.exit(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	code := exitOK
	select {
	case err := <-served:
		log.Error("server stopped", "err", err)
		code = exitFailure
	case sig := <-sigs:
		log.Info("draining", "signal", sig.String(), "drain_timeout", drainTimeout, "drain_policy", opts.DrainPolicy,
			"sessions", srv.ActiveSessions())
	}
	if c := drain(log, srv, d.sup, sigs, drainTimeout); c != exitOK {
		code = c
	}
	sandbox.StopSpawners() // after the drain: the sessions' sandboxes are closed
	log.Info("stopped", "exit_code", code, "live_trees", d.sup.Live())
	return code
}

// start builds the server and binds its listener (and --addr-file).
func (f *serveFlags) start(log *slog.Logger, d *daemon, opts *server.Options, drainTimeout time.Duration) (*server.Server, net.Listener, error) {
	policy, finish, err := f.drain.options(drainTimeout, d.cfg.Harness.StopGrace.D())
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	opts.Config, opts.Adapters, opts.Supervisor, opts.Logger = d.cfg, d.x.adapters, d.sup, log
	opts.DrainPolicy, opts.DrainFinishTimeout = policy, finish
	opts.Isolation, opts.SandboxHide = d.isolation, daemonFiles(f.env.config, f.tokenFile)
	srv, err := server.New(*opts)
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return nil, nil, withCode(exitFailure, listenError(f.listen, err))
	}
	if f.addrFile != "" {
		if err := writeAddrFile(f.addrFile, ln.Addr().String()+"\n"); err != nil {
			ln.Close()
			return nil, nil, withCode(exitFailure, fmt.Errorf("--addr-file: %w", err))
		}
	}
	return srv, ln, nil
}

// listenError names --listen and, for an address in use, what to do.
func listenError(addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("--listen %s: the address is in use (another process listens there): stop it or choose another port; --listen 127.0.0.1:0 with --addr-file FILE takes a free one: %w", addr, err)
	}
	return fmt.Errorf("--listen %s: %w", addr, err)
}

// sweepLeftovers removes what killed daemons left behind: empty sandbox
// cgroups, and session directories (unless workspace.keep keeps them on
// purpose).
func sweepLeftovers(log *slog.Logger, cfg *config.Config) {
	if n := sandbox.SweepCgroups(); n > 0 {
		log.Info("removed empty sandbox cgroups of daemons no longer running", "count", n)
	}
	if !cfg.Workspace.Keep {
		if _, err := episode.SweepWorkspaces(cfg.WorkspaceRoot(), log); err != nil {
			log.Warn("could not sweep leftover session directories", "err", err)
		}
	}
}

// requirementsMet probes the required mechanisms (only those) as harnessd
// check would, logs every one that is missing, and reports whether all are
// there. A probe that cannot run counts as missing: serve fails closed.
func requirementsMet(log *slog.Logger, iso *isolationFlags, req []string) bool {
	opts, _, err := iso.checkOptions(log)
	if err == nil {
		var rep *probe.Report
		if rep, err = runRequired(opts, req); err == nil {
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
// removed from the daemon's environment). An empty file is an error, not
// "no token"; so is the variable set to nothing but spaces when serving
// (serving: the daemon would run without authentication), where a client
// takes it for no token (HARNESSD_API_TOKEN= clears an inherited one).
func apiToken(file string, serving bool) (string, error) {
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
	t, set := os.LookupEnv("HARNESSD_API_TOKEN")
	os.Unsetenv("HARNESSD_API_TOKEN")
	t = strings.TrimSpace(t)
	if serving && set && t == "" {
		// A token meant but left empty (a template's unfilled value)
		// would otherwise serve without authentication.
		return "", errors.New("HARNESSD_API_TOKEN is set but empty: give the token, or unset the variable to run without one")
	}
	return t, nil
}
