package session

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/jsonshape"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/session/simuser"
	"github.com/harnessd/harnessd/wire"
)

// rubricTimeout bounds all rubrics of one turn together.
const rubricTimeout = 5 * time.Minute

// teardownTimeout bounds stopping the harness tree and closing the tools at
// the end of an episode; each stop's own SIGTERM-to-SIGKILL grace is far
// shorter.
const teardownTimeout = 30 * time.Second

// teardown returns a context for cleaning up after ctx's request: it keeps
// ctx's values (logger, trace) but not its cancellation, and is bounded by
// teardownTimeout.
func teardown(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
}

// completed ends a turn the adapter completed: it decides whether the episode
// ends, emits turn_complete, scores the turn and builds its observation.
func (s *Session) completed(ctx context.Context, r *run, a wire.Action, in harness.TurnInput, res harness.TurnResult, started time.Time) *wire.Observation {
	ep := r.ep
	n := in.Number
	done := s.endsEpisode(n, res) || submitted(r, a) || lastStep(r, n)
	var udone *simuser.Answer
	if !done {
		// The simulated user sees the turn and answers the next message
		// or done (user.go).
		if udone = s.afterTurn(ctx, r, n, in.Message, res); udone != nil {
			done = true
		}
	} else {
		r.user.note(n, "assistant", "", res.Response)
	}
	limits := s.reachedLimits(r)
	res.Extra = shapedExtra(res.Extra)
	s.queueFor(r).afterResponse(ctx, res.Response)
	s.events.Add(wire.New(wire.OriginHarness, &wire.TurnComplete{
		Response: res.Response, Done: res.Done, Cancelled: res.Cancelled, Extra: res.Extra,
	}))
	events := s.events.EndTurn()

	s.mu.Lock()
	r.steps = n
	s.mu.Unlock()
	resp := res.Response
	obs := &wire.Observation{Done: done, Metadata: wire.Metadata{
		EpisodeID: r.id, TurnNumber: n, Response: &resp, TurnEvents: events, Truncated: s.events.Truncation(),
		HarnessDone: res.Done, Cancelled: res.Cancelled, Extra: res.Extra,
		ModelIssues: ep.ModelIssues(n), LimitsReached: limits,
	}}
	if udone != nil {
		obs.Metadata.UserDone, obs.Metadata.UserReason = true, udone.Reason
	}
	obs.Reward, obs.Metadata.RewardDetails = s.score(ctx, r, a, res, obs)
	s.gradeTask(ctx, r, obs)
	done = obs.Done // a multi-step task's step may have ended it
	if obs.Reward != nil {
		ep.RecordReward(n, *obs.Reward)
	}
	s.noteObservation(obs)
	// At debug, not info: one line per turn was 6.3% of the daemon's CPU
	// on a turn's hot path (issue 28), and what it says is in the
	// observation and the record file already. Not sampled either: a
	// sample of turns answers no question an operator has, and the
	// episode's start, failures and warnings stay at info and warn.
	if log := ep.Log(); log.Enabled(ctx, slog.LevelDebug) {
		log.Debug("turn complete", "turn", n, "elapsed", time.Since(started), "events", len(events),
			"reward", rewardValue(obs.Reward), "done", done, "harness_done", res.Done)
	}
	if done {
		s.finish(ctx, r, "")
	}
	return obs
}

// endsEpisode says whether a completed turn n ends the episode: the harness
// declared the task done (when the configuration ends on done), or the
// episode reached max_turns. Both are normal ends, without an error_type
// (OpenEnv's clients read error_type as a failure); metadata.harness_done
// tells a finished task from an episode cut at max_turns.
func (s *Session) endsEpisode(n int, res harness.TurnResult) bool {
	if res.Done && s.cfg.Episode.EndsOnDone() {
		return true
	}
	max := s.cfg.Episode.MaxTurns
	return max > 0 && n >= max
}

// score runs the rubrics that apply after a turn. The reward is nil when
// none applies or any that applies failed (its error is in the details),
// so that a trainer can tell "no reward" from a reward of 0; otherwise it
// is the weighted sum of their scores.
func (s *Session) score(ctx context.Context, r *run, a wire.Action, res harness.TurnResult, obs *wire.Observation) (*float64, []wire.RewardDetail) {
	if !s.rubrics.Applies(obs.Done) {
		return nil, nil
	}
	mdJSON, _ := wire.MarshalNoEscape(obs.Metadata)
	rctx, cancel := context.WithTimeout(ctx, rubricTimeout)
	defer cancel()
	total, details := s.rubrics.Score(rctx, rubric.Input{
		EpisodeID: r.id, TurnNumber: obs.Metadata.TurnNumber, Message: a.Message, Response: res.Response,
		Done: obs.Done, HarnessDone: res.Done, Observation: mdJSON, Workspace: r.ep.Dirs().Workspace,
		Sandbox: r.ep.RubricSandbox, Dialogue: r.user.Dialogue(),
	})
	// One rubric that failed makes the reward unknown, not the sum of the
	// others: what the harness leaves behind (a workspace a scorer times
	// out on, an answer it could not start with) must not be able to drop
	// a penalty rubric from the sum and so raise its reward.
	for _, d := range details {
		if d.Score == nil {
			return nil, details
		}
	}
	if len(details) == 0 {
		return nil, details
	}
	return &total, details
}

// rewardValue is a reward for logs: its value, or nil.
func rewardValue(r *float64) any {
	if r == nil {
		return nil
	}
	return *r
}

// terminal ends the episode on a failure and builds its observation. No
// rubric runs: the reward is null, unless the episode's task is graded
// (gradeTask: the agent's work is graded whatever stopped it).
func (s *Session) terminal(ctx context.Context, r *run, n int, f *harness.Failure) *wire.Observation {
	ep := r.ep
	tctx, cancel := teardown(ctx)
	defer cancel()
	ep.StopHarness(tctx)
	exit, tail, _ := r.adapter().Diagnostics()
	if f.Exit == nil {
		f.Exit = exit
	}
	if f.StderrTail == "" {
		f.StderrTail = tail
	}
	if n <= 1 || f.Exit != nil && (f.Exit.Code == 126 || f.Exit.Code == 127) {
		// A one-shot harness starts with its first turn; 126 and 127
		// are a shell's "cannot execute" and "not found".
		ep.ExplainSandboxed(f)
	}
	limits := s.reachedLimits(r)
	s.events.Add(wire.ErrorEvent(wire.OriginDaemon, f.Message, false))
	events := s.events.EndTurn()
	s.finish(tctx, r, f.Type)
	s.mu.Lock()
	s.last = &wire.LastError{Type: f.Type, Message: f.Message}
	s.mu.Unlock()
	ep.Log().Warn("episode ended by failure", append([]any{"turn", n, "error_type", f.Type, "error", f.Message}, exitAttr(f.Exit)...)...)
	empty := ""
	obs := &wire.Observation{Done: true, Metadata: wire.Metadata{
		EpisodeID: r.id, TurnNumber: n, Response: &empty, TurnEvents: events, Truncated: s.events.Truncation(),
		ErrorType: f.Type, Error: f.Message, Exit: wireExit(f.Exit), StderrTail: f.StderrTail,
		ModelIssues: ep.ModelIssues(n), LimitsReached: limits,
	}}
	s.gradeTask(ctx, r, obs)
	s.noteObservation(obs)
	return obs
}

// finish ends an episode whose last turn is over: the harness tree, its
// sandbox and the bridge stop (revoking the token); the workspace stays until the next
// Reset or Close. A failure leaves the episode inactive (steps get
// ErrNoEpisode), a normal end leaves it done (ErrEpisodeDone).
func (s *Session) finish(ctx context.Context, r *run, failure wire.FailureType) {
	tctx, cancel := teardown(ctx)
	defer cancel()
	if err := r.ep.Stop(tctx); err != nil {
		r.ep.Log().Warn("episode ended uncleanly", "err", err)
	}
	s.mu.Lock()
	r.active = false
	r.done = failure == ""
	s.mu.Unlock()
}

// shapedExtra is a turn's extra fields as a trainer may be given them: a
// value its JSON decoder could not take (jsonshape.Check) is replaced by a
// note naming why, lone surrogate escapes become \ufffd. x itself is
// returned when every value passes (the common case: none, or a stop
// reason).
func shapedExtra(x map[string]any) map[string]any {
	var out map[string]any
	for k, v := range x {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		var nv any
		switch {
		case jsonshape.Check(b) != nil:
			nv = fmt.Sprintf("(dropped by harnessd: %v, which a trainer's JSON decoder fails on)", jsonshape.Check(b))
		case jsonshape.HasLoneSurrogate(b):
			if json.Unmarshal(jsonshape.ReplaceLoneSurrogates(b), &nv) != nil {
				continue
			}
		default:
			continue
		}
		if out == nil {
			out = maps.Clone(x)
		}
		out[k] = nv
	}
	if out == nil {
		return x
	}
	return out
}
