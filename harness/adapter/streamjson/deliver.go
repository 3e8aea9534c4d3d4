package streamjson

import (
	"context"
	"fmt"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/internal/kit"
)

// Deliver implements harness.Deliverer with Options.MidTurnInput: it writes
// another user line during the running turn, whose own result line the turn
// then waits for. Without the option it is ErrCannotDeliver.
func (a *Adapter) Deliver(ctx context.Context, text string) error {
	p := a.Process()
	line := userLine(text)
	a.mu.Lock()
	if pending := a.writing.Pending(); pending != nil {
		// The turn's message is being written and the agent may already
		// act on it: this delivery belongs to the turn, once it is out.
		a.mu.Unlock()
		if err := kit.Wait(ctx, pending); err != nil {
			return err
		}
		a.mu.Lock()
	}
	switch {
	case p == nil || a.turn == 0:
		a.mu.Unlock()
		return harness.ErrNoTurn
	case !a.opts.MidTurnInput:
		a.mu.Unlock()
		return harness.ErrCannotDeliver
	}
	a.extra++
	a.after += len(line) + 1 // counted first: the harness may read it at once
	a.mu.Unlock()
	if err := p.WriteLine(ctx, line); err != nil {
		a.mu.Lock()
		a.extra = max(a.extra-1, 0)
		a.mu.Unlock()
		return fmt.Errorf("deliver to the harness: %w", err)
	}
	return nil
}

// resultDue reports, at a result line, whether a delivered line's result
// is still due, counting this one against it. When none is, the turn is
// over for deliveries: a later Deliver is ErrNoTurn, so that no result of
// it can end the next turn early.
func (a *Adapter) resultDue() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.extra == 0 {
		a.turn = 0
		return false
	}
	a.extra--
	return true
}

var _ harness.Deliverer = (*Adapter)(nil)
