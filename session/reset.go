package session

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/session/eventlog"
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
	// Sampling overrides harness.model.sampling for this episode, field by
	// field (gateway.Sampling.Merge); nil keeps the configured pin. It
	// needs an engine upstream.
	Sampling *gateway.Sampling
	// PolicyVersion, when set, sets the session's policy version before
	// the episode starts (SetPolicyVersion).
	PolicyVersion *int64
	// AtTurn, when set, resets the session's episode to its own state
	// after that turn (1 to the last turn): the new episode continues from
	// there as a fork's sibling would (from episode.checkpoints, or by
	// replay); its observation's metadata.fork names the old episode.
	AtTurn *int
	// FullTokenIDs, when set, says whether the gateway's llm_response
	// events of this episode carry full prompt ids (true) or only those
	// after the parent call's (false); nil keeps episode.full_token_ids.
	FullTokenIDs *bool
}

// fullTokenIDs is whether a reset's episode gets full prompt ids in its
// llm_response events: its own choice, else the configuration's.
func (s *Session) fullTokenIDs(opts ResetOptions) bool {
	if opts.FullTokenIDs != nil {
		return *opts.FullTokenIDs
	}
	return s.cfg.Episode.FullTokenIDs
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
	pin, err := s.resetSampling(opts)
	if err != nil {
		return nil, err
	}
	ctx, _, end, err := s.beginOp(ctx, false)
	if err != nil {
		return nil, err
	}
	defer end()
	if opts.PolicyVersion != nil {
		s.policy.Set(*opts.PolicyVersion)
	}

	if opts.AtTurn != nil {
		return s.rewind(ctx, *opts.AtTurn)
	}
	t0 := time.Now()
	if s.standby && opts.EpisodeID == "" {
		if ep := s.pool.Take(ctx); ep != nil {
			ep.SetModelSampling(pin)
			return s.handOver(ep, t0, s.fullTokenIDs(opts), pin)
		}
	}
	s.endPrevious(ctx, false)
	if err := s.env.LockDir(); err != nil {
		return nil, err
	}
	stopped := time.Since(t0)
	// The next episode (a spare sandbox or standbys) is prepared once this
	// reset has returned.
	s.afterOp(s.pool.Fill)

	id := opts.EpisodeID
	if id == "" {
		id = uuid.NewString()
	}
	task, err := s.pickTask(opts)
	if err != nil {
		return nil, err
	}
	var rec *eventlog.Recorder
	if s.cfg.RecordDir != "" {
		if rec, err = eventlog.OpenRecorder(s.cfg.RecordDir, id); err != nil {
			return nil, err
		}
	}
	s.events.Reset(rec)
	start := time.Now()
	ep, spare, err := s.open(ctx, episode.Spec{ID: id, Task: task, OnEvent: s.events.Add})
	if err != nil {
		s.events.CloseRecord()
		return nil, err
	}
	ep.SetModelSampling(pin)
	ep.SetModelFullTokenIDs(s.fullTokenIDs(opts))
	r := &run{ep: ep, id: id, user: newUserState(s.cfg), sampling: pin, fullIDs: s.fullTokenIDs(opts)}
	s.events.Note(s.resetRecord(r))
	s.mu.Lock()
	s.cur = r // visible to State and rubric tools from here
	s.last = nil
	s.mu.Unlock()

	a, err := s.newAdapter()
	if err != nil {
		ep.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	t2 := time.Now()
	if err := ep.StartHarness(ctx, a, ep.Launch()); err != nil {
		return s.startupFailed(ctx, r, err, t0), nil
	}
	s.startClocks(r)
	_, _, pid := a.Diagnostics()
	ep.Log().Info("episode started", "harness_pid", pid, "tools", ep.Tools(), "elapsed", time.Since(start))
	ep.Log().Debug("reset phases", "stop_previous", stopped, "spare_sandbox", spare,
		"sandbox_and_doors", t2.Sub(start), "harness_start", time.Since(t2))

	obs := &wire.Observation{Metadata: wire.Metadata{EpisodeID: id, InjectedTools: ep.Tools(), Isolation: s.env.Isolation}}
	s.taskStarted(r, &obs.Metadata)
	s.noteObservation(obs)
	s.notify(EpisodeOpened{SessionID: s.id, EpisodeID: id, Elapsed: time.Since(t0), Observation: obs})
	return obs, nil
}

// open opens the episode of spec up to its doors: from the spare the pool
// prepared, when there is one (spare is then true), else from nothing.
func (s *Session) open(ctx context.Context, spec episode.Spec) (ep *episode.Episode, spare bool, err error) {
	// A spare's sandbox was made before its task was known: a task that
	// names the agent's user needs one made as that user.
	if !s.standby && (spec.Task == nil || spec.Task.AgentUser == nil) {
		if ep := s.pool.Take(ctx); ep != nil {
			if err := ep.Advance(ctx, spec, episode.LevelDoors); err != nil {
				return nil, true, err
			}
			return ep, true, nil
		}
	}
	spec.Env = s.env
	ep, err = episode.Open(ctx, spec, episode.LevelDoors)
	return ep, false, err
}

// handOver makes a standby the session's episode: its events are recorded
// from now on, and the previous episode is retired once the reset has
// returned; fullIDs says whether its gateway's events are whole (SetModelFullTokenIDs).
func (s *Session) handOver(ep *episode.Episode, t0 time.Time, fullIDs bool, pin *gateway.Sampling) (*wire.Observation, error) {
	s.endPrevious(context.Background(), true)
	s.afterOp(s.pool.Fill)
	id := ep.ID()
	var rec *eventlog.Recorder
	if s.cfg.RecordDir != "" {
		var err error
		if rec, err = eventlog.OpenRecorder(s.cfg.RecordDir, id); err != nil {
			s.background(ep)
			return nil, err
		}
	}
	s.events.Reset(rec)
	r := &run{ep: ep, id: id, user: newUserState(s.cfg), sampling: pin, fullIDs: fullIDs}
	s.events.Note(s.resetRecord(r))
	s.mu.Lock()
	s.cur = r
	s.last = nil
	s.mu.Unlock()
	ep.Bind(s.events.Add)
	// After Bind: no model call's event dropped while the episode was held
	// is the base of a delta.
	ep.SetModelFullTokenIDs(fullIDs)
	s.startClocks(r)
	ep.Log().Info("episode started", "standby", true, "tools", ep.Tools(), "elapsed", time.Since(t0))
	obs := &wire.Observation{Metadata: wire.Metadata{EpisodeID: id, InjectedTools: ep.Tools(), Isolation: s.env.Isolation, Standby: true}}
	s.noteObservation(obs)
	s.notify(EpisodeOpened{SessionID: s.id, EpisodeID: id, Standby: true, Elapsed: time.Since(t0), Observation: obs})
	return obs, nil
}

// endPrevious ends the session's previous episode before the next one
// starts. A sandboxed episode with an adapter of its own cannot reach
// anything of the next, so it is closed in the background: at once on a
// cold reset, once the reset has returned on a handover (which is all
// but instant). Otherwise (process isolation, or the reused
// Options.Adapter) its harness and doors stop first and only its
// directories go in the background; a process-isolated episode retired
// earlier is waited for, so that no old tree runs beside the new one.
func (s *Session) endPrevious(ctx context.Context, handover bool) {
	r := s.detach()
	if r == nil {
		return
	}
	s.events.CloseRecord()
	s.episodeEnded(r, "")
	ep := r.ep
	ownAdapter := s.fixed == nil
	switch {
	case handover && ownAdapter:
		ep.Hold(true)
		s.afterOp(func() { s.background(ep) })
	case ep.Sandboxed() && ownAdapter:
		s.background(ep)
	default:
		s.retiring.Wait()
		tctx, cancel := teardown(ctx)
		defer cancel()
		if err := ep.Stop(tctx); err != nil {
			s.log.Warn("previous episode ended uncleanly", "err", err)
		}
		s.background(ep)
	}
}

// startClocks makes a started episode active, its budget running.
func (s *Session) startClocks(r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.cfg.Episode.EpisodeTimeout.D(); d > 0 {
		r.deadline = time.Now().Add(d)
	}
	r.active = true
}

// startupFailed ends the episode whose harness did not start and
// describes the failure; the directories stay until the next reset.
func (s *Session) startupFailed(ctx context.Context, r *run, err error, t0 time.Time) *wire.Observation {
	ep := r.ep
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
	ep.StopHarness(tctx)
	if a := r.adapter(); a != nil && (f.Exit == nil || f.StderrTail == "") {
		exit, tail, _ := a.Diagnostics()
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
	ep.ExplainSandboxed(f)
	ev := wire.ErrorEvent(wire.OriginDaemon, f.Message, false)
	s.events.Add(ev)
	s.events.Note(wire.Record{Kind: wire.RecordEvent, Time: ev.Timestamp, Event: &ev})
	s.mu.Lock()
	s.last = &wire.LastError{Type: f.Type, Message: f.Message}
	s.mu.Unlock()
	ep.Stop(tctx)
	ep.Log().Warn("harness failed to start", append([]any{"error", f.Message}, exitAttr(f.Exit)...)...)
	obs := &wire.Observation{Done: true, Metadata: wire.Metadata{
		EpisodeID: r.id, ErrorType: f.Type, Error: f.Message, Exit: wireExit(f.Exit), StderrTail: f.StderrTail,
		TurnEvents: []wire.Event{ev},
	}}
	s.noteObservation(obs)
	s.notify(EpisodeOpened{SessionID: s.id, EpisodeID: r.id, Elapsed: time.Since(t0), Observation: obs})
	s.episodeEnded(r, f.Type)
	return obs
}
