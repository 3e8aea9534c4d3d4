package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/clip"
)

// Deliver implements harness.Deliverer for agents that queue prompts
// (Info.PromptQueueing, as claude-agent-acp advertises): it sends another
// session/prompt while the turn's prompt is out, which the agent takes into
// the running turn. The turn then ends once every prompt of it is
// answered. Without the capability ACP has no way to add input to a
// running turn: ErrCannotDeliver.
func (a *Adapter) Deliver(ctx context.Context, text string) error {
	a.mu.Lock()
	if pending := a.writing.Pending(); pending != nil {
		// The turn's prompt is being written (the agent may already act on
		// it): this delivery belongs to the turn, once the prompt is out.
		a.mu.Unlock()
		if err := kit.Wait(ctx, pending); err != nil {
			return err
		}
		a.mu.Lock()
	}
	switch {
	case !a.turnActive || !a.promptSent || a.c == nil:
		a.mu.Unlock()
		return harness.ErrNoTurn
	case !a.info.PromptQueueing:
		a.mu.Unlock()
		return harness.ErrCannotDeliver
	case !a.accepting:
		a.mu.Unlock()
		return harness.ErrNoTurn // the turn's prompt is answered: it is ending
	}
	c, sid := a.c, a.info.SessionID
	id := c.nextID.Add(1)
	if a.queued == nil {
		a.queued = map[int64]bool{}
	}
	a.queued[id] = true
	a.mu.Unlock()
	err := c.requestAs(ctx, id, "session/prompt", promptParams{SessionID: sid, Prompt: []textBlock{{Type: "text", Text: text}}})
	if err != nil {
		a.mu.Lock()
		delete(a.queued, id)
		a.mu.Unlock()
		return fmt.Errorf("acp: queued session/prompt: %w", err)
	}
	return nil
}

// queuedAnswer takes the response to a delivered prompt (watch.response).
func (a *Adapter) queuedAnswer(m *message) bool {
	id, err := strconv.ParseInt(string(trimQuotes(m.ID)), 10, 64)
	if err != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.queued[id] {
		return false
	}
	delete(a.queued, id)
	if m.Error != nil {
		a.log.Debug("acp: a queued prompt was refused", "id", id, "err", clip.String(m.Error.Error()))
	}
	return true
}

// awaitQueued stops taking deliveries (the turn's prompt is answered) and
// waits for the answers to the prompts delivered during the turn.
func (a *Adapter) awaitQueued(ctx context.Context, c *conn, w watch) error {
	for {
		a.mu.Lock()
		a.accepting = false
		var next int64
		for id := range a.queued {
			if next == 0 || id < next {
				next = id
			}
		}
		if next != 0 {
			delete(a.queued, next)
		}
		a.mu.Unlock()
		if next == 0 {
			return nil
		}
		if _, err := c.await(ctx, next, w); err != nil {
			if _, refused := err.(*RPCError); refused {
				continue // a refused queued prompt still ends its wait
			}
			return err
		}
	}
}

func trimQuotes(raw json.RawMessage) []byte {
	b := []byte(raw)
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		return b[1 : len(b)-1]
	}
	return b
}

var _ harness.Deliverer = (*Adapter)(nil)
