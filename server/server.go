package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
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
	Config *harness.Config
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
	// Logger receives the server's records.
	Logger *slog.Logger
	// Version is reported by /health and /metadata.
	Version string
	// ExtraSources returns in-process tool sources for each new session.
	ExtraSources func() []bridge.Source
}

// Server serves harness environments. Create it with New, mount Handler or
// call Serve, and call Shutdown to drain.
type Server struct {
	opts    Options
	cfg     *harness.Config
	mode    Mode
	log     *slog.Logger
	token   string
	reg     *registry
	handler http.Handler

	quit     chan struct{} // closed when draining starts
	quitOnce sync.Once
	conns    sync.WaitGroup // open WebSocket handlers
	stopReap context.CancelFunc

	httpMu      sync.Mutex
	httpDefault string // id of the default HTTP session
	httpSrv     *http.Server
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
	s := &Server{
		opts: opts, cfg: opts.Config, mode: opts.Mode, log: opts.Logger, token: opts.APIToken,
		reg: newRegistry(opts.MaxSessions), quit: make(chan struct{}),
	}
	s.handler = s.routes()
	if opts.IdleTimeout > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopReap = cancel
		go s.reapLoop(ctx, opts.IdleTimeout)
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
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.Handle("GET /metadata", g(http.HandlerFunc(s.handleMetadata)))
	mux.Handle("GET /schema", g(http.HandlerFunc(s.handleSchema)))
	mux.Handle("/ws", g(http.HandlerFunc(s.handleWS)))
	mux.Handle("POST /mcp", g(http.HandlerFunc(s.handleMCP)))
	if s.mode == Simulation {
		mux.Handle("POST /reset", g(http.HandlerFunc(s.handleReset)))
		mux.Handle("POST /step", g(http.HandlerFunc(s.handleStep)))
		mux.Handle("GET /state", g(http.HandlerFunc(s.handleState)))
		mux.Handle("GET /episodes/{episode_id}/export", g(http.HandlerFunc(s.handleExport)))
	} else {
		mux.Handle("/harness", g(http.HandlerFunc(s.handleHarness)))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONStatus(w, http.StatusNotFound, map[string]any{"detail": "Not Found"})
	})
	return mux
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

// Shutdown drains the server: it stops accepting connections, ends every
// session (abandoning running turns and killing every harness tree), closes
// sockets with "going away", and waits for handlers until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.quitOnce.Do(func() { close(s.quit) })
	if s.stopReap != nil {
		s.stopReap()
	}
	s.httpMu.Lock()
	hs := s.httpSrv
	s.httpMu.Unlock()
	var errs []error
	httpDone := make(chan error, 1)
	if hs != nil {
		go func() { httpDone <- hs.Shutdown(ctx) }()
	} else {
		httpDone <- nil
	}
	sessions := s.reg.drain()
	var wg sync.WaitGroup
	for _, m := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.destroy(m, "server shutting down")
		}()
	}
	wg.Wait()
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("websocket handlers still running: %w", ctx.Err()))
	}
	errs = append(errs, <-httpDone)
	s.log.Info("drained", "sessions_ended", len(sessions))
	return errors.Join(errs...)
}

// newSession builds an environment session.
func (s *Server) newSession(id string) (*harness.Session, error) {
	var extra []bridge.Source
	if s.opts.ExtraSources != nil {
		extra = s.opts.ExtraSources()
	}
	return harness.NewSession(harness.Options{
		Config: s.cfg, Adapters: s.opts.Adapters, Supervisor: s.opts.Supervisor, Logger: s.log, ExtraSources: extra, ID: id,
	})
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
	return errors.Is(err, harness.ErrNoEpisode) || errors.Is(err, harness.ErrEpisodeDone) ||
		errors.Is(err, harness.ErrBusy) || errors.Is(err, harness.ErrClosed)
}
