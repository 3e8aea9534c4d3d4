package session

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// ResetOptions start an episode.
type ResetOptions struct {
	// EpisodeID names the episode; empty means a new UUID.
	EpisodeID string
	// Seed is accepted for OpenEnv compatibility (harnesses are not
	// seeded); with a taskset and no TaskID or TaskIndex it picks the task
	// (tasks.Set.Pick).
	Seed *int64
	// TaskID picks the episode's task by id; TaskIndex by its position in
	// the taskset (at most one of them).
	TaskID    string
	TaskIndex *int
}

// Reset ends any running episode (killing its tree and revoking its bridge
// token), then starts a fresh one: new private workspace and HOME, tool
// sources as configured, a bridge with a new token, injection, harness
// start-up until ready.
//
// A harness that fails to start is not an error: Reset returns a terminal
// observation with error_type startup_failed, the exit status and stderr
// tail. Errors are returned for configuration and infrastructure problems
// (tool name conflicts, tool servers that fail to start, a closed session)
// and for an episode id that CheckEpisodeID refuses.
func (s *Session) Reset(ctx context.Context, opts ResetOptions) (*wire.Observation, error) {
	if err := CheckEpisodeID(opts.EpisodeID); err != nil {
		return nil, err
	}
	ctx, _, end, err := s.beginOp(ctx, false)
	if err != nil {
		return nil, err
	}
	defer end()

	t0 := time.Now()
	if sb := s.takeStandby(ctx, opts); sb != nil {
		// The previous episode is retired at once (no events, its doors
		// closing) and torn down in the background: a handed-over reset
		// does not wait for the old tree to exit.
		s.retireEpisode(handoverQuiet)
		defer s.fillStandbysAfter(handoverQuiet)
		ep, err := s.handOver(sb)
		if err != nil {
			return nil, err
		}
		s.startClocks(ep)
		ep.log.Info("episode started", "standby", true, "tools", ep.tools, "elapsed", time.Since(t0))
		obs := &wire.Observation{Metadata: wire.Metadata{EpisodeID: ep.id, InjectedTools: ep.tools, Isolation: s.iso, Standby: true}}
		s.events.note(observationRecord(obs))
		return obs, nil
	}
	if !s.retireSandboxed() {
		if err := s.endEpisode(ctx); err != nil {
			s.log.Warn("previous episode ended uncleanly", "err", err)
		}
	}
	if err := s.lockDir(); err != nil {
		return nil, err
	}
	stopped := time.Since(t0)
	// Standbys (or, without them, the next episode's sandbox) are
	// prepared while this episode runs.
	defer s.fillStandbys()
	if s.warm <= 0 {
		defer s.prepareSpare()
	}

	id := opts.EpisodeID
	if id == "" {
		id = uuid.NewString()
	}
	ep := &episode{id: id, log: s.log.With("episode_id", id)}
	start := time.Now()
	spareUsed := s.takeSpare(ctx, ep)
	if !spareUsed {
		s.mu.Lock()
		s.epSeq++
		seq := s.epSeq
		s.mu.Unlock()
		dirs, err := makeEpisodeDirs(s.dir, seq, s.cfg.Workspace.Template)
		if err != nil {
			return nil, err
		}
		ep.dirs = dirs
	}
	var rec *recorder
	if s.cfg.RecordDir != "" {
		if rec, err = openRecorder(s.cfg.RecordDir, id); err != nil {
			s.discard(ctx, ep)
			return nil, err
		}
	}
	s.events.reset(rec)
	if err := s.prepareTask(ep, opts); err != nil {
		s.discard(ctx, ep)
		return nil, err
	}

	t1 := time.Now()
	inj, err := s.openEpisode(ctx, ep)
	if err != nil {
		s.discard(ctx, ep)
		return nil, err
	}
	s.events.note(s.resetRecord(ep))
	s.mu.Lock()
	s.ep = ep // visible to state() and rubric tools from here
	s.last = nil
	s.mu.Unlock()

	launch := s.launch(ep, inj)
	s.taskLaunch(ep, launch)
	s.modelLaunch(ep, launch)
	if err := s.giveToHarness(ep); err != nil {
		s.discard(ctx, ep)
		return nil, err
	}
	t2 := time.Now()
	if err := s.adapter.Start(ctx, launch); err != nil {
		return s.startupFailed(ctx, ep, err), nil
	}
	s.startClocks(ep)
	_, _, pid := s.adapter.Diagnostics()
	ep.log.Info("episode started", "harness_pid", pid, "tools", ep.tools, "elapsed", time.Since(start))
	ep.log.Debug("reset phases", "stop_previous", stopped, "spare_sandbox", spareUsed,
		"sandbox_and_doors", t2.Sub(t1), "harness_start", time.Since(t2))

	obs := &wire.Observation{Metadata: wire.Metadata{EpisodeID: id, InjectedTools: ep.tools, Isolation: s.iso}}
	s.taskStarted(ep, &obs.Metadata)
	s.events.note(observationRecord(obs))
	return obs, nil
}

// openEpisode gives ep its sandbox (sandbox isolation), tools and bridge,
// the MCP injection, its model gateway and egress proxy. On error the
// caller discards ep.
func (s *Session) openEpisode(ctx context.Context, ep *episode) (*harness.MCPInjection, error) {
	if err := s.openSandbox(ctx, ep); err != nil {
		return nil, err
	}
	if err := s.openTools(ctx, ep); err != nil {
		return nil, err
	}
	if ep.server == nil {
		// No tools: nothing serves the bridge's door, so close it (a
		// connection to it is refused rather than left hanging).
		if l := ep.door(doorMCP); l != nil {
			l.Close()
		}
	}
	inj, err := s.injection(ep)
	if err != nil {
		return nil, err
	}
	if err := s.openModel(ep); err != nil {
		return nil, err
	}
	if err := s.openEgress(ep); err != nil {
		return nil, err
	}
	return inj, nil
}

// startClocks makes a started episode active, its budget running.
func (s *Session) startClocks(ep *episode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.cfg.Episode.EpisodeTimeout.D(); d > 0 {
		ep.deadline = time.Now().Add(d)
	}
	ep.active = true
}

// launch assembles what the adapter needs.
func (s *Session) launch(ep *episode, inj *harness.MCPInjection) *harness.Launch {
	h := &s.cfg.Harness
	set := map[string]string{}
	for k, v := range h.Env {
		set[k] = v
	}
	set["HOME"] = ep.dirs.home
	set["TMPDIR"] = ep.dirs.tmp
	if ep.egress != nil {
		for _, kv := range egress.Environ(ep.egressAddr) {
			k, v, _ := strings.Cut(kv, "=")
			set[k] = v
		}
	}
	allow := append(append([]string(nil), process.DefaultEnvAllowlist...), h.PassEnv...)
	var launcher process.Launcher
	workDir := ""
	if ep.sandbox != nil {
		launcher = ep.sandbox.Launcher()
		workDir = s.mountAt(ep)
	}
	return &harness.Launch{
		Launcher:       launcher,
		WorkDir:        workDir,
		EpisodeID:      ep.id,
		Command:        h.Command,
		Workspace:      ep.dirs.workspace,
		Home:           ep.dirs.home,
		Env:            process.Environ(os.Environ(), allow, set),
		MCP:            inj,
		Options:        h.Options,
		StartupTimeout: h.StartupTimeout.D(),
		StopGrace:      h.StopGrace.D(),
		MaxLineBytes:   int(h.MaxLineBytes),
		Supervisor:     s.sup,
		Logger:         ep.log,
	}
}

// startupFailed tears the episode down and describes the failure.
func (s *Session) startupFailed(ctx context.Context, ep *episode, err error) *wire.Observation {
	f, ok := harness.AsFailure(err)
	if !ok {
		f = harness.Wrap(wire.FailureStartupFailed, err, "harness failed to start")
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		f = harness.Wrap(wire.FailureCancelled, ctx.Err(), "reset abandoned")
	}
	f.Type = wire.FailureStartupFailed
	tctx, cancel := teardown(ctx)
	defer cancel()
	s.adapter.Stop(tctx)
	if f.Exit == nil || f.StderrTail == "" {
		exit, tail, _ := s.adapter.Diagnostics()
		if f.Exit == nil {
			f.Exit = exit
		}
		if f.StderrTail == "" {
			f.StderrTail = tail
		}
	}
	if ctx.Err() == nil && errors.Is(f, context.DeadlineExceeded) {
		f.Message = startupTimeoutMessage(s.cfg.Harness.StartupTimeout.D(), f.StderrTail)
	}
	ev := wire.ErrorEvent(wire.OriginDaemon, f.Message, false)
	s.events.add(ev)
	s.events.note(wire.Record{Kind: wire.RecordEvent, Time: ev.Timestamp, Event: &ev})
	s.mu.Lock()
	s.last = &wire.LastError{Type: f.Type, Message: f.Message}
	s.mu.Unlock()
	s.closeTools(tctx, ep)
	s.closeModel(ep)
	s.closeEgress(tctx, ep)
	s.closeSandbox(ep)
	ep.log.Warn("harness failed to start", append([]any{"error", f.Message}, exitAttr(f.Exit)...)...)
	obs := &wire.Observation{Done: true, Metadata: wire.Metadata{
		EpisodeID: ep.id, ErrorType: f.Type, Error: f.Message, Exit: wireExit(f.Exit), StderrTail: f.StderrTail,
		TurnEvents: []wire.Event{ev},
	}}
	s.events.note(observationRecord(obs))
	return obs
}

// discard removes a half-built episode.
func (s *Session) discard(ctx context.Context, ep *episode) {
	tctx, cancel := teardown(ctx)
	defer cancel()
	s.closeTools(tctx, ep)
	s.closeModel(ep)
	s.closeEgress(tctx, ep)
	s.closeSandbox(ep)
	if !s.cfg.Workspace.Keep {
		os.RemoveAll(ep.dirs.root)
	}
}

// endEpisode tears the current episode down completely: harness tree, tools,
// record file and (unless workspace.keep) its directories. Reset and Close
// call it.
func (s *Session) endEpisode(ctx context.Context) error {
	s.retiring.Wait() // episodes retired in the background are gone too
	s.mu.Lock()
	ep := s.ep
	if ep != nil {
		ep.active = false
	}
	s.mu.Unlock()
	stopErr := s.adapter.Stop(ctx)
	if ep == nil {
		return stopErr
	}
	err := errors.Join(stopErr, s.closeTools(ctx, ep))
	s.closeModel(ep)
	s.closeEgress(ctx, ep)
	s.events.closeRecord()
	// The tree has stopped (its run ended, every process of it killed):
	// the idle init, its cgroup and the directories go in the background.
	s.retiring.Add(1)
	go func() {
		defer s.retiring.Done()
		s.closeSandbox(ep)
		if !s.cfg.Workspace.Keep {
			os.RemoveAll(ep.dirs.root)
		}
	}()
	return err
}

// retireSandboxed retires a sandboxed previous episode in the background
// and gives the session a fresh adapter, so the reset does not wait for the
// old tree to stop: it is contained in its own namespaces, its doors are
// its own and its events are no longer recorded. It reports false (the
// caller ends the episode itself) in process isolation, without a
// previous episode, or without an adapter registry.
func (s *Session) retireSandboxed() bool {
	s.mu.Lock()
	ep := s.ep
	s.mu.Unlock()
	if s.iso != config.IsolationSandbox || s.adapters == nil || ep == nil || ep.sandbox == nil {
		return false
	}
	fresh, err := s.adapters.New(&s.cfg.Harness.Config)
	if err != nil {
		return false
	}
	s.retireEpisode(0)
	s.mu.Lock()
	s.adapter = fresh
	s.mu.Unlock()
	return true
}

// handoverQuiet is how long after a standby's handover the previous
// episode's teardown and the next standby's preparation wait, so that on a
// small machine they do not compete with the reset's reply. The previous
// episode is inactive and records nothing from the handover on.
const handoverQuiet = 20 * time.Millisecond

// retireEpisode detaches the current episode and its adapter and tears
// them down in the background (a standby's handover): the episode records
// nothing more and is inactive at once; Close and the next endEpisode wait
// for the teardown.
func (s *Session) retireEpisode(after time.Duration) {
	s.mu.Lock()
	ep, a := s.ep, s.adapter
	if ep != nil {
		ep.active = false
		ep.held.Store(true)
	}
	s.mu.Unlock()
	s.events.closeRecord()
	s.retiring.Add(1)
	go func() {
		defer s.retiring.Done()
		time.Sleep(after) // let the reset's reply go out first
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Harness.StopGrace.D()+teardownTimeout)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			s.log.Warn("retired harness did not stop cleanly", "err", err)
		}
		if ep == nil {
			return
		}
		s.closeTools(ctx, ep)
		s.closeModel(ep)
		s.closeEgress(ctx, ep)
		s.closeSandbox(ep)
		if !s.cfg.Workspace.Keep {
			os.RemoveAll(ep.dirs.root)
		}
	}()
}
