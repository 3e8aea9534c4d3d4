package session

import (
	"context"
	"errors"
	"sync"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// runTurn runs the adapter's turn within budget b, streaming its events into
// the episode's log, and classifies how it failed (nil for a completed turn).
func (s *Session) runTurn(ctx context.Context, r *run, b turnBudget, in harness.TurnInput) (harness.TurnResult, *harness.Failure) {
	tctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	res, err := r.adapter().Turn(tctx, in, s.events.Add)
	timedOut := errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	switch {
	case timedOut:
		return res, b.exceeded()
	case err != nil:
		return res, s.classifyTurnError(ctx, r, err)
	}
	return res, nil
}

// classifyTurnError turns an adapter's turn error into the harness.Failure that ends
// the episode: the step's own cancellation first, then the adapter's own
// classification, then whether the harness is still alive.
func (s *Session) classifyTurnError(ctx context.Context, r *run, err error) *harness.Failure {
	if ctx.Err() != nil {
		return harness.Wrap(wire.FailureCancelled, nil, "turn abandoned: %v", context.Cause(ctx))
	}
	if f, ok := harness.AsFailure(err); ok {
		return limitOr(r, f, err)
	}
	if r.adapter().Alive() {
		return harness.Wrap(wire.FailureProtocol, err, "harness turn failed")
	}
	if f := r.ep.LimitFailure(); f != nil {
		f.Err = err
		return f
	}
	return harness.Wrap(wire.FailureHarnessCrashed, err, "harness died mid-turn")
}

// limitOr is f, the adapter's failure, unless the harness died of a limit
// of its sandbox's cgroup (the OOM killer, its pids limit): then it is
// resource_limit naming the limit and its knob, with f's exit status and
// stderr tail. The adapter sees only an end of output and an exit status
// ("killed by SIGKILL"), which it reports as a crash.
func limitOr(r *run, f *harness.Failure, err error) *harness.Failure {
	if f.Type != wire.FailureHarnessCrashed {
		return f
	}
	lf := r.ep.LimitFailure()
	if lf == nil {
		return f
	}
	lf.Exit, lf.StderrTail, lf.Err = f.Exit, f.StderrTail, err
	return lf
}

// turnSignal tells Interrupt where a step is: live is closed once the
// adapter's turn is live (it has taken the message, so its Interrupt reaches
// the turn), over once the step has ended.
type turnSignal struct {
	live     chan struct{}
	over     chan struct{}
	liveOnce sync.Once
}

func newTurnSignal() *turnSignal {
	return &turnSignal{live: make(chan struct{}), over: make(chan struct{})}
}

// markLive closes live once; adapters call it through harness.TurnInput.MarkLive.
func (t *turnSignal) markLive() { t.liveOnce.Do(func() { close(t.live) }) }

// Interrupt asks the harness to end the running turn early (best effort);
// the conversation continues. Called while a step is starting, it waits
// until the adapter's turn is live (the adapter has delivered the turn's
// message), so the interrupt is not lost; without a running step, or once
// the step's turn is over, it does nothing.
func (s *Session) Interrupt(ctx context.Context) error {
	s.mu.Lock()
	sig := s.turn
	r := s.cur
	s.mu.Unlock()
	if sig == nil {
		return nil
	}
	select {
	case <-sig.live:
	case <-sig.over:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	err := r.adapter().Interrupt(ctx)
	if errors.Is(err, harness.ErrNoTurn) {
		return nil // the turn ended meanwhile
	}
	return err
}
