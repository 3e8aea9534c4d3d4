package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/server/console"
	"github.com/harnessd/harnessd/server/metrics"
	"github.com/harnessd/harnessd/server/trainer"
	"github.com/harnessd/harnessd/session"
)

// Mode selects which surfaces the server offers.
type Mode string

// Modes, as in OpenEnv.
const (
	// Simulation: training; /ws, /reset, /step, /state; no /harness.
	Simulation Mode = "simulation"
	// Production: serving; /harness is the agent interface, /reset, /step
	// and /state are absent, and error messages are sanitized.
	Production Mode = "production"
)

// ParseMode accepts "simulation" or "production" in any case.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", string(Simulation):
		return Simulation, nil
	case string(Production):
		return Production, nil
	}
	return "", fmt.Errorf("invalid mode %q: must be %q or %q", s, Simulation, Production)
}

// Defaults of server options.
const (
	DefaultMaxFrameBytes = 64 << 20
	DefaultPingInterval  = 20 * time.Second
	writeTimeout         = 30 * time.Second
)

// Options configure a Server.
type Options struct {
	// Config is the environment every session runs (normalized).
	Config *config.Config
	// Adapters makes each session's adapter from Config.Harness.Adapter.
	Adapters *harness.Registry
	// Mode is simulation (default) or production.
	Mode Mode
	// MaxSessions bounds concurrent sessions (default 1).
	MaxSessions int
	// IdleTimeout destroys sessions that no socket holds and no turn runs on
	// after this long without activity (0: never).
	IdleTimeout time.Duration
	// APIToken, when set, is required as a bearer token on every surface
	// but /health. It is never passed to harnesses.
	APIToken string
	// MaxFrameBytes bounds one incoming WebSocket frame or HTTP body.
	MaxFrameBytes int64
	// PingInterval is how often WebSocket peers are pinged (0: default;
	// negative: never).
	PingInterval time.Duration
	// Supervisor starts every process.
	Supervisor *process.Supervisor
	// Isolation is the level harnesses run at (config.IsolationSandbox or
	// config.IsolationProcess); empty means the configuration's, else
	// process.
	Isolation string
	// SandboxHide lists the daemon's own files covered inside every
	// sandbox (its configuration and token files).
	SandboxHide []string
	// Logger receives the server's records.
	Logger *slog.Logger
	// Version is reported by /health and /metadata.
	Version string
	// ExtraSources returns in-process tool sources for each new session.
	ExtraSources func() []bridge.Source
	// DrainPolicy says what Shutdown does with running turns: DrainFinish
	// (default) lets them finish within DrainFinishTimeout, DrainCancel
	// abandons them at once.
	DrainPolicy DrainPolicy
	// DrainFinishTimeout bounds how long Shutdown waits for running turns
	// under DrainFinish before it cancels them (0: DefaultDrainFinishTimeout).
	DrainFinishTimeout time.Duration
}

// Server serves harness environments. Create it with New, mount Handler or
// call Serve, and call Shutdown to drain.
type Server struct {
	opts  Options
	cfg   *config.Config
	mode  Mode
	log   *slog.Logger
	token string
	reg   *registry
	// closing holds sessions removed from reg whose Close has not returned
	// (id -> *managed), so that their episode's export stays reachable
	// until Close has written it to record_dir.
	closing sync.Map
	handler http.Handler
	metrics *metrics.Metrics
	console *console.Console // the web console (simulation mode)
	trainer trainer.Options  // policy versions (server/trainer)

	draining atomic.Bool   // set when Shutdown starts: readiness false, no new work
	quit     chan struct{} // closed when sockets must close (sessions ended)
	quitCtx  context.Context
	// followers starts a reader for /ws frames that run long (wsloop.go).
	followers *followers
	// endQuit ends quitCtx as quit is closed.
	endQuit  context.CancelFunc
	quitOnce sync.Once
	conns    sync.WaitGroup // open WebSocket handlers
	stopReap func()         // ends the idle reaper and waits for the session it is closing

	httpMu      sync.Mutex
	httpDefault string // id of the default HTTP session
	httpSrv     *http.Server
	shutDown    bool // Shutdown has stopped (or found no) httpSrv; Serve refuses after it
}

// New checks options and builds the server.
func New(opts Options) (*Server, error) {
	if opts.Config == nil {
		return nil, errors.New("server: no environment configuration")
	}
	if opts.Supervisor == nil {
		return nil, errors.New("server: no process supervisor")
	}
	if opts.Adapters == nil {
		return nil, errors.New("server: no adapter registry")
	}
	if opts.Mode == "" {
		opts.Mode = Simulation
	}
	if _, err := ParseMode(string(opts.Mode)); err != nil {
		return nil, err
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 1
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if opts.PingInterval == 0 {
		opts.PingInterval = DefaultPingInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.DrainPolicy == "" {
		opts.DrainPolicy = DrainFinish
	}
	if _, err := ParseDrainPolicy(string(opts.DrainPolicy)); err != nil {
		return nil, err
	}
	if opts.DrainFinishTimeout <= 0 {
		opts.DrainFinishTimeout = DefaultDrainFinishTimeout
	}
	s := &Server{
		opts: opts, cfg: opts.Config, mode: opts.Mode, log: opts.Logger, token: opts.APIToken,
		reg: newRegistry(opts.MaxSessions, opts.IdleTimeout), quit: make(chan struct{}),
	}
	s.quitCtx, s.endQuit = context.WithCancel(context.Background())
	s.followers = newFollowers(s.quit)
	s.trainer = trainer.Options{Daemon: gateway.NewPolicyVersion(nil), Sessions: trainer.List(s.reg.list, func(m *managed) trainer.Session { return m.sess })}
	s.metrics = metrics.New(metrics.Options{Version: opts.Version, MaxSessions: opts.MaxSessions, Live: opts.Supervisor.Live, Policy: s.trainer.Daemon,
		Kinds: []string{kindWS, kindHTTP, kindHarness, kindMCP, kindFork}, Surfaces: []string{surfaceWS, surfaceHarness, surfaceHTTP, surfaceMCP}})
	s.console = console.New(console.Options{
		Config: s.cfg, Isolation: s.isolation(), Guard: s.guard, PeerOnly: s.peerOnly, Quit: s.quit, WriteTimeout: writeTimeout, Forks: s.reg.forkLinks,
		Sessions: func() []console.Session {
			list := s.reg.list()
			out := make([]console.Session, 0, len(list))
			for _, m := range list {
				out = append(out, m.view())
			}
			return out
		},
		Lookup: func(id string) (console.Session, bool) {
			if m := s.reg.get(id); m != nil {
				return m.view(), true
			}
			return console.Session{}, false
		},
	})
	s.handler = s.routes()
	if opts.IdleTimeout > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		reaped := make(chan struct{})
		// Shutdown waits for a session the reaper is closing: the daemon
		// must not exit with its episodes' directories (and their disk
		// quotas' mounts) half closed.
		s.stopReap = func() { cancel(); <-reaped }
		go func() {
			defer close(reaped)
			s.reapLoop(ctx, opts.IdleTimeout)
		}()
	}
	if t := s.cfg.Episode.TurnTimeout.D(); t > 60*time.Second {
		s.log.Info("turn timeout exceeds the OpenEnv Python client's default 60 s receive timeout; "+
			"clients must set message_timeout_s at least this high", "turn_timeout", t)
	}
	return s, nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	g := s.guard
	orch := func(h http.HandlerFunc) http.Handler { return g(s.counted(surfaceHTTP, h)) }
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /ready", s.handleReady)
	mux.Handle("GET /metrics", g(s.metrics.Handler()))
	mux.Handle("GET /openapi.json", g(http.HandlerFunc(s.handleOpenAPI)))
	mux.Handle("GET /docs", g(http.HandlerFunc(s.handleDocs)))
	mux.Handle("GET /metadata", g(http.HandlerFunc(s.handleMetadata)))
	mux.Handle("GET /tasks", g(http.HandlerFunc(s.handleTasks)))
	mux.Handle("GET /schema", g(http.HandlerFunc(s.handleSchema)))
	mux.Handle("/ws", g(http.HandlerFunc(s.handleWS)))
	mux.Handle("POST /mcp", g(s.counted(surfaceMCP, s.handleMCP)))
	if s.mode == Simulation {
		mux.Handle("POST /reset", orch(s.handleReset))
		mux.Handle("POST /step", orch(s.handleStep))
		mux.Handle("GET /state", orch(s.handleState))
		mux.Handle("POST /close", orch(s.handleClose))
		mux.Handle("GET /episodes/{episode_id}/export", orch(s.handleExport))
		mux.Handle("POST /fork", orch(s.handleFork))
		mux.Handle("/policy_version", orch(s.trainer.ServeHTTP))
		s.console.Routes(mux)
	} else {
		mux.Handle("/harness", g(http.HandlerFunc(s.handleHarness)))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body := map[string]any{"detail": "Not Found"}
		if other := s.otherModesRoute(r.URL.Path); other != "" {
			body["hint"] = fmt.Sprintf("%s is served in %s mode only; this server runs in %s mode (serve --mode, $OPENENV_MODE, the configuration's mode:)",
				r.URL.Path, other, s.mode)
		}
		writeJSONStatus(w, http.StatusNotFound, body)
	})
	return mux
}

// otherModesRoute names the mode that serves path when this server's mode
// does not ("" when neither does): a client of the wrong mode is told so.
func (s *Server) otherModesRoute(path string) Mode {
	first := "/" + strings.SplitN(strings.TrimPrefix(path, "/"), "/", 2)[0]
	switch {
	case s.mode == Production && slices.Contains([]string{"/reset", "/step", "/state", "/close", "/episodes", "/fork", "/policy_version", "/web"}, first):
		return Simulation
	case s.mode != Production && first == "/harness":
		return Production
	}
	return ""
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// ActiveSessions returns the number of sessions (and reservations).
func (s *Server) ActiveSessions() int { return s.reg.count() }

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext:       connContext,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.httpMu.Lock()
	if s.shutDown {
		// Shutdown came first: it found no server to stop, so this one
		// must not start.
		s.httpMu.Unlock()
		ln.Close()
		return nil
	}
	s.httpSrv = hs
	s.httpMu.Unlock()
	s.log.Info("serving", "addr", ln.Addr().String(), "mode", s.mode, "max_sessions", s.opts.MaxSessions,
		"environment", s.cfg.Name, "auth", s.token != "")
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// newSession builds an environment session.
func (s *Server) newSession(id string, observe session.Observer) (*session.Session, error) {
	var extra []bridge.Source
	if s.opts.ExtraSources != nil {
		extra = s.opts.ExtraSources()
	}
	return session.NewSession(session.Options{
		Config: s.cfg, Adapters: s.opts.Adapters, Supervisor: s.opts.Supervisor, Logger: s.log, ExtraSources: extra, ID: id,
		Isolation: s.opts.Isolation, Hide: s.opts.SandboxHide, Observer: observe, Policy: s.trainer.Daemon,
	})
}

// peerOnly refuses harness processes (refusedPeer), as guard does, without
// asking for the token.
func (s *Server) peerOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.refusedPeer(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isolation names how harness trees are contained and killed: "sandbox",
// or process isolation's kill mechanisms.
func (s *Server) isolation() string {
	if s.isolationLevel() == config.IsolationSandbox {
		return config.IsolationSandbox
	}
	return s.opts.Supervisor.Mechanisms().KillMode()
}

// isolationLevel is the level sessions run harnesses at.
func (s *Server) isolationLevel() string {
	switch {
	case s.opts.Isolation != "":
		return s.opts.Isolation
	case s.cfg.Isolation != "":
		return s.cfg.Isolation
	}
	return config.IsolationProcess
}

// execError maps an error from an environment operation onto a wire error.
func (s *Server) execError(err error) *wireError {
	var ce *CapacityError
	var fe *factoryError
	switch {
	case errors.As(err, &ce):
		return &wireError{Message: ce.Error(), Code: codeCapacity, ActiveSessions: &ce.Active, MaxSessions: &ce.Max}
	case errors.As(err, &fe):
		s.log.Error("environment factory failed", "err", fe.err)
		return &wireError{Message: fmt.Sprintf("Environment factory '%s' failed to create instance.", s.cfg.Name),
			Code: codeFactory, FactoryName: s.cfg.Name}
	case errors.Is(err, errDraining):
		return &wireError{Message: "server is shutting down", Code: codeSession}
	case errors.Is(err, session.ErrBusy):
		return &wireError{Message: err.Error(), Code: codeBusy}
	case isTaskChoiceError(err):
		return &wireError{Message: err.Error(), Code: codeValidation}
	}
	msg := err.Error()
	if s.mode == Production && !isUsageError(err) {
		s.log.Warn("environment operation failed", "err", err)
		msg = "environment operation failed"
	}
	return &wireError{Message: msg, Code: codeExecution}
}

// isUsageError reports errors that describe the client's misuse, safe to
// show in any mode.
func isUsageError(err error) bool {
	return errors.Is(err, session.ErrNoEpisode) || errors.Is(err, session.ErrEpisodeDone) ||
		errors.Is(err, session.ErrBusy) || errors.Is(err, session.ErrClosed) ||
		errors.Is(err, session.ErrEpisodeIDInUse)
}
