package session

import (
	"context"
	"fmt"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// Step runs one conversational turn. emit, if not nil, receives every event
// of the turn as it happens (it must not block for long).
//
// Harness failures are observations, not errors: the tree is killed and the
// observation has done set with metadata.error_type. Step returns an error
// only for misuse: ErrNoEpisode, ErrEpisodeDone, ErrBusy, ErrClosed.
//
// The turn's parts live in their own files: the budget (budget.go), running
// the adapter's turn and classifying its failure (turn.go), scoring and the
// observation (observe.go).
func (s *Session) Step(ctx context.Context, a wire.Action, emit func(wire.Event)) (*wire.Observation, error) {
	if playRequested(a) {
		if s.cfg.User == nil {
			return nil, ErrNoUser
		}
		return s.play(ctx, a, emit) // user.go
	}
	ctx, sig, end, err := s.beginOp(ctx, true)
	if err != nil {
		return nil, err
	}
	defer end()

	r, err := s.steppable()
	if err != nil {
		return nil, err
	}
	n := r.steps + 1
	a, source, uf, udone := s.userMessage(ctx, r, n, a) // the simulated user's turn, when it writes it (user.go)
	if s.events.Recording() {
		s.events.Note(messageRecord(n, a.Message, source))
	}
	s.events.BeginTurn(n, s.streamTo(r, emit))
	s.notify(TurnStarted{SessionID: s.id, EpisodeID: r.id, Turn: n, Action: a})

	started := time.Now()
	wallStart := started.Round(0) // file times are wall clock
	var obs *wire.Observation
	if f := s.betweenTurnsFailure(r); f != nil || uf != nil {
		if f == nil {
			f = uf
		}
		obs = s.terminal(ctx, r, n, f)
	} else if udone != nil {
		obs = s.userEnded(ctx, r, n, udone)
	} else {
		obs = s.runStep(ctx, r, a, n, sig)
		obs.Metadata.MessageSource = source
	}
	s.noteWorkspace(r, n, wallStart)
	s.notify(TurnEnded{SessionID: s.id, EpisodeID: r.id, Elapsed: time.Since(started), Observation: obs})
	if obs.Done {
		s.episodeEnded(r, obs.Metadata.ErrorType)
	}
	return obs, nil
}

// runStep runs turn n of r and builds its observation.
func (s *Session) runStep(ctx context.Context, r *run, a wire.Action, n int, sig *turnSignal) *wire.Observation {
	ep := r.ep
	if obs := s.beginTaskStep(ctx, r, n); obs != nil {
		return obs // the step's setup.sh failed: graded, done
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = s.stepTimeout(r, n)
	}
	b := s.turnBudget(r, timeout)
	started := time.Now()
	in := harness.TurnInput{Number: n, Message: s.turnMessage(r, n, a.Message), OutputLimit: int64(s.cfg.Episode.OutputLimit), Live: sig.markLive}
	q := s.queueFor(r) // nil without events:
	in.Message = q.beforeTurn(ctx, n, in.Message)
	mctx, endModelTurn := ep.BeginModelTurn(ctx, n)
	disarm := q.startTurn(mctx, n)
	res, f := s.runTurn(mctx, r, b, in)
	disarm()
	endModelTurn()
	if bf := ep.ModelBudgetFailure(); bf != nil {
		f = bf // a refused model call ended the turn
	}
	if f != nil {
		return s.terminal(ctx, r, n, f)
	}
	if f := s.noteTurnForFork(ctx, r, n, in.Message); f != nil {
		return s.terminal(ctx, r, n, f)
	}
	return s.completed(ctx, r, a, in, res, started)
}

// streamTo is the turn's event sink: the step's emit and the observer.
func (s *Session) streamTo(r *run, emit func(wire.Event)) func(wire.Event) {
	if s.observer == nil {
		return emit
	}
	return func(e wire.Event) {
		if emit != nil {
			emit(e)
		}
		s.notify(TurnEvent{SessionID: s.id, EpisodeID: r.id, Event: e})
	}
}

// steppable returns the episode a step may run in, or the misuse error.
func (s *Session) steppable() (*run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.cur
	switch {
	case r == nil:
		return nil, ErrNoEpisode
	case r.done:
		return nil, ErrEpisodeDone
	case !r.active:
		return nil, ErrNoEpisode
	}
	return r, nil
}

// betweenTurnsFailure reports why a turn cannot begin at all: the episode's
// budget is spent, or the harness is gone.
func (s *Session) betweenTurnsFailure(r *run) *harness.Failure {
	s.mu.Lock()
	held := r.heldOff
	s.mu.Unlock()
	if held != nil {
		return held
	}
	if !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
		return harness.Fail(wire.FailureEpisodeTimeout, "episode exceeded %s (episode.episode_timeout)", s.episodeBudget(r))
	}
	if a := r.adapter(); !a.Alive() {
		exit, _, _ := a.Diagnostics()
		msg := "harness process is not running"
		if exit != nil {
			msg = fmt.Sprintf("harness %s between turns", exit)
		}
		return harness.Fail(wire.FailureHarnessExited, "%s", msg)
	}
	return nil
}
