package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/wire"
)

// rubricTimeout bounds all rubrics of one turn together.
const rubricTimeout = 5 * time.Minute

// Step runs one conversational turn. emit, if not nil, receives every event
// of the turn as it happens (it must not block for long).
//
// Harness failures are observations, not errors: the tree is killed and the
// observation has done set with metadata.error_type. Step returns an error
// only for misuse: ErrNoEpisode, ErrEpisodeDone, ErrBusy, ErrClosed.
func (s *Session) Step(ctx context.Context, a wire.Action, emit func(wire.Event)) (*wire.Observation, error) {
	ctx, end, err := s.beginOp(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	s.mu.Lock()
	ep := s.ep
	s.mu.Unlock()
	switch {
	case ep == nil:
		return nil, ErrNoEpisode
	case ep.done:
		return nil, ErrEpisodeDone
	case !ep.active:
		return nil, ErrNoEpisode
	}
	n := ep.steps + 1
	s.phase.Store(phaseStarting)
	defer s.phase.Store(phaseIdle)
	s.events.beginTurn(n, emit)
	turnEvents := func() []wire.Event { return s.events.endTurn() }

	if !ep.deadline.IsZero() && !time.Now().Before(ep.deadline) {
		return s.terminal(ep, n, Fail(wire.FailureEpisodeTimeout, "episode exceeded %s", s.cfg.Episode.EpisodeTimeout), turnEvents), nil
	}
	if !s.adapter.Alive() {
		exit, _, _ := s.adapter.Diagnostics()
		msg := "harness process is not running"
		if exit != nil {
			msg = fmt.Sprintf("harness %s between turns", exit)
		}
		return s.terminal(ep, n, Fail(wire.FailureHarnessExited, "%s", msg), turnEvents), nil
	}

	budget := s.cfg.Episode.TurnTimeout.D()
	if a.Timeout > 0 {
		budget = a.Timeout
	}
	limitType, limitMsg := wire.FailureTurnTimeout, "harness turn exceeded "+formatSeconds(budget)+" seconds"
	if !ep.deadline.IsZero() {
		if left := time.Until(ep.deadline); left < budget {
			budget = left
			limitType, limitMsg = wire.FailureEpisodeTimeout, "episode exceeded "+s.cfg.Episode.EpisodeTimeout.String()
		}
	}
	tctx, cancel := context.WithTimeout(ctx, budget)
	tctx, endModelTurn := s.beginModelTurn(tctx, ep, n)
	started := time.Now()
	s.phase.Store(phaseInTurn)
	res, err := s.adapter.Turn(tctx, TurnInput{Number: n, Message: a.Message, OutputLimit: int64(s.cfg.Episode.OutputLimit)}, s.events.add)
	s.phase.Store(phaseIdle)
	timedOut := errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	endModelTurn()
	cancel()
	if f := s.modelBudgetFailure(ep); f != nil {
		return s.terminal(ep, n, f, turnEvents), nil
	}
	if err != nil || timedOut {
		var f *Failure
		switch {
		case timedOut:
			f = Fail(limitType, "%s", limitMsg)
		case ctx.Err() != nil:
			f = Wrap(wire.FailureCancelled, nil, "turn abandoned: %v", context.Cause(ctx))
		default:
			var ok bool
			if f, ok = AsFailure(err); !ok {
				if s.adapter.Alive() {
					f = Wrap(wire.FailureProtocol, err, "harness turn failed")
				} else {
					f = Wrap(wire.FailureHarnessCrashed, err, "harness died mid-turn")
				}
			}
		}
		return s.terminal(ep, n, f, turnEvents), nil
	}

	// A completed turn.
	done, errType, errMsg := false, wire.FailureType(""), ""
	if res.Done && s.cfg.Episode.EndsOnDone() {
		done = true
	}
	if max := s.cfg.Episode.MaxTurns; max > 0 && n >= max && !done {
		done, errType, errMsg = true, wire.FailureMaxTurns, fmt.Sprintf("episode reached max_turns (%d)", max)
	}
	s.events.add(wire.New(wire.OriginHarness, &wire.TurnComplete{
		Response: res.Response, Done: res.Done, Cancelled: res.Cancelled, Extra: res.Extra,
	}))
	events := turnEvents()

	s.mu.Lock()
	ep.steps = n
	s.mu.Unlock()
	resp := res.Response
	obs := &wire.Observation{Done: done, Metadata: wire.Metadata{
		EpisodeID: ep.id, TurnNumber: n, Response: &resp, TurnEvents: events,
		HarnessDone: res.Done, Cancelled: res.Cancelled, ErrorType: errType, Error: errMsg, Extra: res.Extra,
		ModelIssues: s.modelIssues(ep, n),
	}}
	reward := 0.0
	if s.rubrics.Applies(done) {
		mdJSON, _ := wire.MarshalNoEscape(obs.Metadata)
		rctx, rcancel := context.WithTimeout(ctx, rubricTimeout)
		reward, obs.Metadata.RewardDetails = s.rubrics.Score(rctx, rubric.Input{
			EpisodeID: ep.id, TurnNumber: n, Message: a.Message, Response: res.Response,
			Done: done, HarnessDone: res.Done, Observation: mdJSON, Workspace: ep.dirs.workspace,
		})
		rcancel()
		s.recordReward(ep, n, reward)
	}
	obs.Reward = &reward
	ep.log.Info("turn complete", "turn", n, "elapsed", time.Since(started), "events", len(events),
		"reward", reward, "done", done, "harness_done", res.Done)
	if done {
		s.finish(ep, "")
	}
	return obs, nil
}

// terminal ends the episode on a failure and builds its observation.
func (s *Session) terminal(ep *episode, n int, f *Failure, turnEvents func() []wire.Event) *wire.Observation {
	s.adapter.Stop(context.Background())
	exit, tail, _ := s.adapter.Diagnostics()
	if f.Exit == nil {
		f.Exit = exit
	}
	if f.StderrTail == "" {
		f.StderrTail = tail
	}
	s.events.add(wire.ErrorEvent(wire.OriginDaemon, f.Message, false))
	events := turnEvents()
	s.finish(ep, f.Type)
	s.mu.Lock()
	s.last = &wire.LastError{Type: f.Type, Message: f.Message}
	s.mu.Unlock()
	ep.log.Warn("episode ended by failure", append([]any{"turn", n, "error_type", f.Type, "error", f.Message}, exitAttr(f.Exit)...)...)
	zero, empty := 0.0, ""
	return &wire.Observation{Reward: &zero, Done: true, Metadata: wire.Metadata{
		EpisodeID: ep.id, TurnNumber: n, Response: &empty, TurnEvents: events,
		ErrorType: f.Type, Error: f.Message, Exit: wireExit(f.Exit), StderrTail: f.StderrTail,
		ModelIssues: s.modelIssues(ep, n),
	}}
}

// finish ends an episode whose last turn is over: the harness tree and the
// bridge stop (revoking the token); the workspace stays until the next
// Reset or Close. A failure leaves the episode inactive (steps get
// ErrNoEpisode), a normal end leaves it done (ErrEpisodeDone).
func (s *Session) finish(ep *episode, failure wire.FailureType) {
	s.adapter.Stop(context.Background())
	s.closeTools(context.Background(), ep)
	s.closeModel(ep)
	s.mu.Lock()
	ep.active = false
	ep.done = failure == ""
	s.mu.Unlock()
}

// formatSeconds prints a duration in seconds the way Python prints floats
// (600.0, 0.05), matching the reference's timeout message.
func formatSeconds(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	for _, c := range s {
		if c == '.' || c == 'e' {
			return s
		}
	}
	return s + ".0"
}
