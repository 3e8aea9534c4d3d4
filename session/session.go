package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/session/eventlog"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// Options configure a Session.
type Options struct {
	// Config is the environment; it must have been normalized
	// (config.LoadConfig, config.ParseConfig or Config.Normalize) and have
	// an adapter.
	Config *config.Config
	// Supervisor starts every process of the session.
	Supervisor *process.Supervisor
	// Logger is the parent logger; the session adds session_id (and
	// episode_id per episode).
	Logger *slog.Logger
	// Adapters makes the adapter Config.Harness.Adapter names, a fresh one
	// per episode; it is required unless Adapter is set.
	Adapters *harness.Registry
	// Adapter overrides the adapters made from Config.Harness.Adapter: it
	// is reused, episode after episode (no standbys; a previous episode is
	// always stopped before the next starts).
	Adapter harness.Adapter
	// ExtraSources are tool sources beyond the configured ones (e.g.
	// in-process Go tools). The session starts and closes them.
	ExtraSources []bridge.Source
	// ID is the session id; empty means a new UUID.
	ID string
	// ModelListener opens the listener of each episode's model gateway
	// (when harness.model.url is set); nil means a fresh port on
	// 127.0.0.1. A sandboxed episode's gateway listens on its door instead.
	ModelListener episode.ListenFunc

	// Isolation is the level the daemon resolved (config.IsolationSandbox
	// or config.IsolationProcess); empty means Config.Isolation, and
	// process when that is empty too.
	Isolation string
	// SandboxInit is the binary re-executed as each sandbox's init; empty
	// means the running binary (which must call sandbox.Init in main).
	SandboxInit string
	// Hide lists further host paths covered inside every sandbox (the
	// daemon's token and configuration files).
	Hide []string
	// Warm, when positive, overrides Config.Warm: how many next episodes
	// the session keeps prepared with their harness started. Standbys need
	// Adapters (an explicit Adapter cannot be duplicated).
	Warm int
	// Observer is told of the session's lifecycle (observer.go); nil
	// means nobody listens.
	Observer Observer
	// Trace, when set, is told of every resource an episode opens and
	// closes (episode.Env.Trace).
	Trace func(episode.TraceEvent)
	// Policy is the daemon's policy version; the session's own
	// (SetPolicyVersion) overrides it until it is set again. nil: the
	// session's alone.
	Policy *gateway.PolicyVersion
}

// Session is one trainer's environment: at most one episode at a time.
// Its methods are safe for concurrent use; Reset and Step are exclusive
// (a concurrent one fails with ErrBusy) and Close interrupts them.
type Session struct {
	id       string
	cfg      *config.Config
	log      *slog.Logger
	env      *episode.Env
	adapters *harness.Registry // makes each episode's adapter; nil with Options.Adapter
	fixed    harness.Adapter   // Options.Adapter
	rubrics  *rubric.Set
	pool     *episode.Pool // spares or standbys; nil without
	standby  bool          // the pool holds started harnesses
	observer Observer
	policy   *gateway.PolicyVersion // the session's, under Options.Policy
	ended    chan struct{}          // closed once Close has finished
	events   eventlog.Log
	opts     Options    // what made the session: a fork's siblings are made alike
	forked   forkOrigin // where a sibling came from (fork.go); zero otherwise

	mu       sync.Mutex
	closed   bool
	busy     bool
	opCancel context.CancelFunc
	opDone   chan struct{}
	after    []func()    // started once the running Reset or Step is over
	held     []func()    // after-work waiting for its reply (AfterReply)
	turn     *turnSignal // the running step's, for Interrupt; nil without one
	cur      *run        // the current (or last) episode; nil before the first
	last     *wire.LastError
	retiring sync.WaitGroup // episodes closed in the background
}

// run is the current episode and what the session keeps of it.
type run struct {
	ep       *episode.Episode
	id       string
	active   bool // the harness runs and steps are allowed
	done     bool // ended normally; further steps get ErrEpisodeDone
	steps    int
	deadline time.Time     // zero: no episode budget
	budget   time.Duration // the task's episode budget, when it set deadline
	graded   bool          // the task's tests have run
	reported bool          // EpisodeEnded was sent
	user     *userState    // the simulated user (user.go); nil without user:
	// queue is the episode's event queue (envqueue.go), made on first use.
	queue     *eventQueue
	queueOnce sync.Once
	// A multi-step task's steps graded so far, and why it stopped early.
	stepResults []tasks.StepResult
	stepGrades  []wire.TaskGrade
	stepStopped string
	// What a fork of the episode needs (fork.go): each turn's message as
	// the harness got it (for replay; dropped past maxReplayMessageBytes or maxReplayTurns),
	// the bridge's record count after each turn (toolMarks[0] is 0), and
	// the directories' checkpoints (episode.checkpoints; nil without).
	messages     []string
	messageBytes int
	messagesLost bool
	toolMarks    []int
	checkpoints  *episode.Checkpoints
	// The reset's sampling pin and full_token_ids, which a fork's siblings
	// keep.
	sampling *gateway.Sampling
	fullIDs  bool
	states   map[int]*harness.ForkState // the harness's, per checkpoint
	// heldOff is why the episode ends at its next step when a fork's
	// snapshot found the harness holding a write to its disk open (the
	// harness is stopped then; see heldOffFailure).
	heldOff *harness.Failure
}

// adapter returns the run's harness adapter (nil before it started).
func (r *run) adapter() harness.Adapter { return r.ep.Adapter() }

// NewSession prepares a session. It starts nothing (processes and tool
// servers start at Reset) unless warm is set: then it begins preparing the
// standby episodes at once.
func NewSession(opts Options) (*Session, error) { return newSession(opts, forkOrigin{}) }

// newSession makes a session; a fork's sibling (origin set) prepares no
// standby at once: its first episode is the fork's.
func newSession(opts Options, origin forkOrigin) (*Session, error) {
	cfg := opts.Config
	if cfg == nil {
		return nil, errors.New("session: no configuration")
	}
	if opts.Supervisor == nil {
		return nil, errors.New("session: no process supervisor")
	}
	s := &Session{id: opts.ID, cfg: cfg, fixed: opts.Adapter, observer: opts.Observer, ended: make(chan struct{}),
		policy: gateway.NewPolicyVersion(opts.Policy), opts: opts, forked: origin}
	if s.fixed == nil {
		s.adapters = opts.Adapters
		if s.adapters == nil {
			return nil, fmt.Errorf("session: no adapter registry to make adapter %q (Options.Adapters)", cfg.Harness.Adapter)
		}
		if _, err := s.adapters.New(&cfg.Harness.Config); err != nil {
			return nil, err
		}
	}
	iso := opts.Isolation
	if iso == "" {
		iso = cfg.Isolation
	}
	if iso == "" {
		iso = config.IsolationProcess
	}
	if iso == config.IsolationProcess && (cfg.Limits.Any() || cfg.Network.EgressPolicy() == config.EgressAllow) {
		return nil, errors.New("session: limits and network.egress: allow need isolation: sandbox, and this daemon runs harnesses in process isolation")
	}
	s.events.SetLimits(cfg.Episode)
	if s.id == "" {
		s.id = uuid.NewString()
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s.log = log.With("session_id", s.id)
	s.env = &episode.Env{
		Config: cfg, Supervisor: opts.Supervisor, Isolation: iso, SandboxInit: opts.SandboxInit, Hide: opts.Hide,
		ModelListener: opts.ModelListener, Dir: filepath.Join(cfg.WorkspaceRoot(), s.id), Logger: s.log,
		Sources: opts.ExtraSources, Trace: opts.Trace, Policy: s.policy,
	}
	if err := s.env.Init(); err != nil {
		return nil, err
	}
	rs, err := rubric.New(cfg.Rubrics, rubric.Deps{
		Supervisor: opts.Supervisor,
		CallTool:   s.callHiddenTool,
		Env:        process.DefaultEnviron(nil),
		Logger:     s.log,
	})
	if err != nil {
		return nil, err
	}
	s.rubrics = rs
	s.makePool(opts.Warm)
	if s.standby && origin.sessionID == "" {
		// With warm: N the first reset can already be handed a standby.
		if err := s.env.LockDir(); err != nil {
			s.log.Warn("no standby episodes: the session directory is not usable", "err", err)
		} else {
			s.pool.Fill()
		}
	}
	return s, nil
}

// makePool chooses what the session prepares ahead of its resets: with
// warm: N (and adapters to make), N standbys with their harness started;
// else, in sandbox isolation, one spare sandbox; else, with a disk quota
// (formatting and mounting its file system costs tens of milliseconds),
// one spare episode's directories. With a taskset only the directories
// are prepared: the next task (its WORKDIR, its limits) is not known.
func (s *Session) makePool(warmOpt int) {
	warm := s.cfg.Warm
	if warmOpt > 0 {
		warm = warmOpt
	}
	quota := s.env.DiskQuota() > 0
	switch {
	case s.cfg.Taskset() != nil:
		if quota {
			s.pool = episode.NewPool(s.env, episode.LevelDirectories, 1, nil)
		}
	case warm > 0 && s.adapters != nil:
		s.pool = episode.NewPool(s.env, episode.LevelDoors, warm, s.newAdapter)
		s.standby = true
	case s.env.Sandboxed():
		s.pool = episode.NewPool(s.env, episode.LevelSandbox, 1, nil)
	case quota:
		s.pool = episode.NewPool(s.env, episode.LevelDirectories, 1, nil)
	}
}

// newAdapter makes a fresh adapter for an episode.
func (s *Session) newAdapter() (harness.Adapter, error) {
	if s.fixed != nil {
		return s.fixed, nil
	}
	return s.adapters.New(&s.cfg.Harness.Config)
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Config returns the session's configuration (do not modify it).
func (s *Session) Config() *config.Config { return s.cfg }

// beginOp claims the session for Reset or Step and returns a context that
// Close cancels. A step also gets its turn signal, published under the same
// lock that marks the session busy, so that an Interrupt arriving while the
// step starts waits for its turn instead of being lost. The returned end
// releases the session and starts the work queued with afterOp.
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
	parent := ctx
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
		after := s.after
		s.after = nil
		s.mu.Unlock()
		if sig != nil {
			close(sig.over)
		}
		close(done)
		s.startAfter(parent, after)
	}, nil
}

// afterOp queues f to start once the running Reset or Step has returned
// and, when its caller said so (AfterReply), once the caller has written
// the reply: background work (retiring the previous episode, preparing
// the next) is ordered after the reply, never by waiting a while.
func (s *Session) afterOp(f func()) {
	s.mu.Lock()
	s.after = append(s.after, f)
	s.mu.Unlock()
}

// background closes ep in the background; Close and a cold reset in
// process isolation wait for it.
func (s *Session) background(ep *episode.Episode) {
	s.retiring.Add(1)
	go func() {
		defer s.retiring.Done()
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Harness.StopGrace.D()+teardownTimeout)
		defer cancel()
		if err := ep.Close(ctx); err != nil {
			s.log.Warn("a retired episode did not close cleanly", "episode_id", ep.ID(), "err", err)
		}
	}()
}

// Busy reports whether a Reset or Step is running.
func (s *Session) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy
}

// current returns the current run, nil before the first reset.
func (s *Session) current() *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// State reports the current episode.
func (s *Session) State() wire.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := wire.State{Tools: []string{}, LastError: s.last, TurnRunning: s.busy}
	r := s.cur
	if r == nil {
		return st
	}
	id := r.id
	st.EpisodeID = &id
	st.StepCount = r.steps
	st.Active = r.active
	st.Done = r.done || !r.active
	st.Tools = append(st.Tools, r.ep.Tools()...)
	if a := r.adapter(); a != nil && st.Active {
		_, _, pid := a.Diagnostics()
		st.HarnessPID = pid
		st.HarnessAlive = a.Alive()
	}
	return st
}

// Trajectory returns the events of the current (or last) episode in order,
// as far as the session keeps them: the whole episode while it has at most
// 1,000 ended turns and 16 MiB of events, then a window of the latest turns
// (the running one included). TrajectoryWindow also says what is left out.
// The record file (record_dir) has every event of every turn.
func (s *Session) Trajectory() []wire.Event {
	evs, _ := s.events.Trajectory()
	return evs
}

// TrajectoryWindow returns what Trajectory does and what of the episode is
// no longer in it. The web console shows a live episode's records from it.
func (s *Session) TrajectoryWindow() ([]wire.Event, Omitted) { return s.events.Trajectory() }

// Omitted is what of an episode's trajectory the session no longer keeps in
// memory: its oldest turns, beyond the window of the latest ones.
type Omitted = eventlog.Omitted

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
	s.pool.Close()
	s.startHeld() // after-work a caller never released: retirements (the closed pool fills nothing)
	if r := s.detach(); r != nil {
		s.events.CloseRecord()
		errs = append(errs, r.ep.Close(ctx))
		s.episodeEnded(r, "")
	}
	s.retiring.Wait() // the episodes closed in the background
	for _, src := range s.env.Sources {
		if err := src.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close tool source %s: %w", src.Name(), err))
		}
	}
	s.env.ReleaseDir()
	s.log.Debug("session closed")
	return errors.Join(errs...)
}

// detach takes the current run off the session, inactive.
func (s *Session) detach() *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.cur
	if r != nil {
		r.active = false
	}
	return r
}

// callHiddenTool serves tool rubrics: it calls through the current
// episode's catalog, which reaches hidden tools the harness cannot see.
func (s *Session) callHiddenTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	var ep *episode.Episode
	if r := s.current(); r != nil {
		ep = r.ep
	}
	return ep.CallHiddenTool(ctx, name, args)
}
