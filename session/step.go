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
	ctx, sig, end, err := s.beginOp(ctx, true)
	if err != nil {
		return nil, err
	}
	defer end()

	ep, err := s.steppable()
	if err != nil {
		return nil, err
	}
	n := ep.steps + 1
	s.events.note(messageRecord(n, a.Message))
	s.events.beginTurn(n, emit)

	if f := s.betweenTurnsFailure(ep); f != nil {
		return s.terminal(ctx, ep, n, f), nil
	}
	b := s.turnBudget(ep, a.Timeout)
	started := time.Now()
	in := harness.TurnInput{Number: n, Message: s.turnMessage(ep, n, a.Message), OutputLimit: int64(s.cfg.Episode.OutputLimit), Live: sig.markLive}
	mctx, endModelTurn := s.beginModelTurn(ctx, ep, n)
	res, f := s.runTurn(mctx, b, in)
	endModelTurn()
	if bf := s.modelBudgetFailure(ep); bf != nil {
		f = bf // a refused model call ended the turn
	}
	if f != nil {
		return s.terminal(ctx, ep, n, f), nil
	}
	return s.completed(ctx, ep, a, in, res, started), nil
}

// steppable returns the episode a step may run in, or the misuse error.
func (s *Session) steppable() (*episode, error) {
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
	return ep, nil
}

// betweenTurnsFailure reports why a turn cannot begin at all: the episode's
// budget is spent, or the harness is gone.
func (s *Session) betweenTurnsFailure(ep *episode) *harness.Failure {
	if !ep.deadline.IsZero() && !time.Now().Before(ep.deadline) {
		return harness.Fail(wire.FailureEpisodeTimeout, "episode exceeded %s", s.episodeBudget(ep))
	}
	if !s.adapter.Alive() {
		exit, _, _ := s.adapter.Diagnostics()
		msg := "harness process is not running"
		if exit != nil {
			msg = fmt.Sprintf("harness %s between turns", exit)
		}
		return harness.Fail(wire.FailureHarnessExited, "%s", msg)
	}
	return nil
}
