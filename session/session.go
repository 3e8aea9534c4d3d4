package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// Options configure a Session.
type Options struct {
	// Config is the environment; it must have been normalized (config.LoadConfig,
	// config.ParseConfig or config.Config.Normalize) and have an adapter.
	Config *config.Config
	// Supervisor starts every process of the session.
	Supervisor *process.Supervisor
	// Logger is the parent logger; the session adds session_id (and
	// episode_id per episode).
	Logger *slog.Logger
	// Adapters makes the adapter config.Config.Harness.Adapter names; it is
	// required unless harness.Adapter is set.
	Adapters *harness.Registry
	// Adapter overrides the adapter made from config.Config.Harness.Adapter.
	Adapter harness.Adapter
	// ExtraSources are tool sources beyond the configured ones (e.g.
	// in-process Go tools). The session starts and closes them.
	ExtraSources []bridge.Source
	// ID is the session id; empty means a new UUID.
	ID string
	// ModelListener opens the listener of each episode's model gateway
	// (when harness.model.url is set); nil means a fresh port on
	// 127.0.0.1. A sandboxed episode's gateway listens on its door instead.
	ModelListener ListenFunc

	// Isolation is the level the daemon resolved (config.IsolationSandbox or
	// config.IsolationProcess); empty means config.Config.Isolation, and process when
	// that is empty too.
	Isolation string
	// SandboxInit is the binary re-executed as each sandbox's init; empty
	// means the running binary (which must call sandbox.Init in main).
	SandboxInit string
	// Hide lists further host paths covered inside every sandbox (the
	// daemon's token and configuration files).
	Hide []string
	// Warm, when positive, overrides config.Config.Warm: how many next episodes
	// the session keeps prepared (standby.go). Standbys need Adapters (an
	// explicit harness.Adapter cannot be duplicated).
	Warm int
}

// Session is one trainer's environment: at most one episode at a time.
// Its methods are safe for concurrent use; Reset and Step are exclusive
// (a concurrent one fails with ErrBusy) and Close interrupts them.
type Session struct {
	id      string
	cfg     *config.Config
	sup     *process.Supervisor
	log     *slog.Logger
	adapter harness.Adapter
	rubrics *rubric.Set
	dir     string        // session directory under the workspace root
	dirLock *os.File      // held while the session lives (sweep.go); nil until the first reset
	ended   chan struct{} // closed once Close has finished
	events  eventLog

	listenModel ListenFunc // opens each episode's model gateway listener

	adapters    *harness.Registry // makes each standby's adapter; nil with Options.Adapter
	warm        int               // standbys to keep prepared
	iso         string            // config.IsolationSandbox or config.IsolationProcess
	sandboxInit string            // Options.SandboxInit
	hide        []string          // Options.Hide
	exposeOnce  sync.Once
	exposeBinds []sandbox.Bind // see exposures
	exposeHide  []string

	// persistent tool sources (started at the first reset, kept across
	// episodes) and the configs of per-episode ones
	sources    []bridge.Source
	perEpisode []config.ToolConfig
	startMu    sync.Mutex // guards started (standbys open tools concurrently)
	started    bool

	mu       sync.Mutex
	closed   bool
	busy     bool
	opCancel context.CancelFunc
	opDone   chan struct{}
	turn     *turnSignal // the running step's, for Interrupt; nil without one
	epSeq    int
	ep       *episode
	next     *spare         // the next episode's prepared sandbox (spare.go)
	standbys []*standby     // prepared next episodes (standby.go)
	retiring sync.WaitGroup // episodes torn down in the background (retireEpisode)
	last     *wire.LastError
}

// episode is the state of the current episode.
type episode struct {
	id      string
	log     *slog.Logger
	dirs    episodeDirs
	sources []bridge.Source // per-episode sources, closed with the episode
	catalog *bridge.Catalog
	server  *bridge.Server
	model   *modelDoor       // the model gateway; nil without harness.model.url
	sandbox *sandbox.Sandbox // the harness's sandbox; nil in process isolation
	// egress is the episode's egress proxy (network.egress: allow), on
	// egressAddr inside the sandbox.
	egress     *egress.Proxy
	egressAddr string
	// held is set while the episode is a standby not handed over: what
	// its doors see is not recorded.
	held     atomic.Bool
	tools    []string
	active   bool // the harness runs and steps are allowed
	done     bool // ended normally; further steps get ErrEpisodeDone
	steps    int
	deadline time.Time // zero: no episode budget

	// The episode's task (task.go): nil without a taskset.
	task   *tasks.Task
	budget time.Duration // the task's episode budget, when it set deadline
	graded bool          // the task's tests have run
}

// NewSession prepares a session. It starts nothing (processes and tool
// servers start at Reset) unless warm is set: then it begins preparing the
// standby episodes at once.
func NewSession(opts Options) (*Session, error) {
	cfg := opts.Config
	if cfg == nil {
		return nil, errors.New("harness: no configuration")
	}
	if opts.Supervisor == nil {
		return nil, errors.New("harness: no process supervisor")
	}
	s := &Session{id: opts.ID, cfg: cfg, sup: opts.Supervisor, adapter: opts.Adapter, listenModel: opts.ModelListener,
		sandboxInit: opts.SandboxInit, hide: opts.Hide, ended: make(chan struct{})}
	s.warm = cfg.Warm
	if opts.Warm > 0 {
		s.warm = opts.Warm
	}
	if opts.Adapter == nil {
		s.adapters = opts.Adapters
	}
	s.iso = opts.Isolation
	if s.iso == "" {
		s.iso = cfg.Isolation
	}
	if s.iso == "" {
		s.iso = config.IsolationProcess
	}
	switch s.iso {
	case config.IsolationSandbox, config.IsolationProcess:
	default:
		return nil, fmt.Errorf("harness: unknown isolation %q", s.iso)
	}
	if s.iso == config.IsolationProcess && (cfg.Limits.Any() || cfg.Network.EgressPolicy() == config.EgressAllow) {
		return nil, errors.New("harness: limits and network.egress: allow need isolation: sandbox, and this daemon runs harnesses in process isolation")
	}
	s.events.setLimits(cfg.Episode)
	if s.id == "" {
		s.id = uuid.NewString()
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s.log = log.With("session_id", s.id)
	if s.adapter == nil {
		if opts.Adapters == nil {
			return nil, fmt.Errorf("harness: no adapter registry to make adapter %q (Options.Adapters)", cfg.Harness.Adapter)
		}
		a, err := opts.Adapters.New(&cfg.Harness.Config)
		if err != nil {
			return nil, err
		}
		s.adapter = a
	}
	for _, tc := range cfg.Tools {
		if tc.PerEpisode {
			s.perEpisode = append(s.perEpisode, tc)
			continue
		}
		s.sources = append(s.sources, s.newSource(tc))
	}
	s.sources = append(s.sources, opts.ExtraSources...)
	s.dir = filepath.Join(cfg.WorkspaceRoot(), s.id)
	rs, err := rubric.New(cfg.Rubrics, rubric.Deps{
		Supervisor: s.sup,
		CallTool:   s.callHiddenTool,
		Env:        process.DefaultEnviron(nil),
		Logger:     s.log,
	})
	if err != nil {
		return nil, err
	}
	s.rubrics = rs
	// With warm: N the first reset can already be handed a standby.
	s.fillStandbys()
	return s, nil
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Config returns the session's configuration (do not modify it).
func (s *Session) Config() *config.Config { return s.cfg }

// beginOp claims the session for Reset or Step and returns a context that
// Close cancels. A step also gets its turn signal, published under the same
// lock that marks the session busy, so that an Interrupt arriving while the
// step starts waits for its turn instead of being lost.
func (s *Session) beginOp(ctx context.Context, step bool) (context.Context, *turnSignal, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, nil, ErrClosed
	}
	if s.busy {
		return nil, nil, nil, ErrBusy
	}
	s.busy = true
	octx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.opCancel, s.opDone = cancel, done
	var sig *turnSignal
	if step {
		sig = newTurnSignal()
		s.turn = sig
	}
	return octx, sig, func() {
		cancel()
		s.mu.Lock()
		s.busy, s.opCancel, s.opDone, s.turn = false, nil, nil, nil
		s.mu.Unlock()
		if sig != nil {
			close(sig.over)
		}
		close(done)
	}, nil
}

// claim takes the session's start lock for work outside Reset/Step that
// must not race them (starting tool sources for the orchestrator).
func (s *Session) claim() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.busy {
		return false
	}
	s.busy = true
	return true
}

func (s *Session) release() {
	s.mu.Lock()
	s.busy = false
	s.mu.Unlock()
}

// Busy reports whether a Reset or Step is running.
func (s *Session) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy
}

// State reports the current episode.
func (s *Session) State() wire.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := wire.State{Tools: []string{}, LastError: s.last, TurnRunning: s.busy}
	if ep := s.ep; ep != nil {
		id := ep.id
		st.EpisodeID = &id
		st.StepCount = ep.steps
		st.Active = ep.active
		st.Done = ep.done || !ep.active
		st.Tools = append(st.Tools, ep.tools...)
	}
	_, _, pid := s.adapter.Diagnostics()
	if st.Active {
		st.HarnessPID = pid
		st.HarnessAlive = s.adapter.Alive()
	}
	return st
}

// Trajectory returns every event of the current (or last) episode in order.
func (s *Session) Trajectory() []wire.Event { return s.events.trajectory() }

// WaitClosed waits until Close has finished (the episode's record and
// export written, every process stopped), or ctx ends.
func (s *Session) WaitClosed(ctx context.Context) error {
	select {
	case <-s.ended:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the session: a running turn is abandoned, the harness tree and
// every tool server are stopped, and the session's directories removed
// (unless workspace.keep). It is idempotent.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cancel, done := s.opCancel, s.opDone
	s.mu.Unlock()
	defer close(s.ended)
	if cancel != nil {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	var errs []error
	s.closeSpare()
	s.closeStandbys()
	errs = append(errs, s.endEpisode(ctx))
	s.retiring.Wait() // the sandboxes and directories ended in the background
	for _, src := range s.sources {
		if err := src.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close tool source %s: %w", src.Name(), err))
		}
	}
	if !s.cfg.Workspace.Keep {
		os.RemoveAll(s.dir)
	}
	s.mu.Lock()
	lock := s.dirLock
	s.dirLock = nil
	s.mu.Unlock()
	if lock != nil {
		lock.Close()
	}
	s.log.Debug("session closed")
	return errors.Join(errs...)
}
