package jsonl

import (
	"context"
	"encoding/json"

	"github.com/harnessd/harnessd/harness"
)

// Deliver implements harness.Deliverer: it writes
// {"type":"event","turn":N,"content":TEXT} for the running turn N. Like a
// cancel it is sent only once the turn's message is, so an event never
// precedes its turn.
func (a *Adapter) Deliver(ctx context.Context, text string) error {
	p := a.Process()
	a.mu.Lock()
	turn := a.turn
	a.mu.Unlock()
	if p == nil || turn == 0 {
		return harness.ErrNoTurn
	}
	line, err := json.Marshal(map[string]any{"type": "event", "turn": turn, "content": text})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.after += len(line) + 1 // counted first: the harness may read it at once
	a.mu.Unlock()
	return p.WriteLine(ctx, line)
}

var _ harness.Deliverer = (*Adapter)(nil)
