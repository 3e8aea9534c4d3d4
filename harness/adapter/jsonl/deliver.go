package jsonl

import (
	"context"
	"encoding/json"

	"github.com/harnessd/harnessd/harness"
)

// Deliver implements harness.Deliverer: it writes
// {"type":"event","turn":N,"content":TEXT} for the running turn N. It is
// sent only once the turn's message is (waiting for that write, until ctx
// ends), so an event never precedes its turn; a harness that acts on the
// message before its write has returned still gets the event mid-turn.
func (a *Adapter) Deliver(ctx context.Context, text string) error {
	p := a.Process()
	if p == nil {
		return harness.ErrNoTurn
	}
	turn, err := a.sentTurn(ctx, true)
	if err != nil {
		return err
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
