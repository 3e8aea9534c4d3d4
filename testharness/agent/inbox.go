package agent

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// inbox holds what the environment delivered during a turn (the line
// protocol's event message, a queued ACP prompt, a stream-json user message
// mid-turn), for the waitevent directive.
type inbox struct {
	once sync.Once
	ch   chan string
}

func (b *inbox) get() chan string {
	b.once.Do(func() { b.ch = make(chan string, 64) })
	return b.ch
}

// Deliver hands the running (or next) turn text the environment sent
// mid-turn; the waitevent directive says it. It never blocks: beyond 64
// undelivered texts the newest are dropped. Safe for concurrent use.
func (e *Executor) Deliver(text string) {
	select {
	case e.inbox.get() <- text:
	default:
	}
}

// defaultEventWait is how long waitevent waits without an argument.
const defaultEventWait = 10 * time.Second

// waitEvent waits up to d for a delivered text: ("event: TEXT", true), or
// ("no event", false) after d, or ("", false) when ctx ends.
func (e *Executor) waitEvent(ctx context.Context, d time.Duration) (string, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case s := <-e.inbox.get():
		// Like a user's message, it joins the model conversation: the
		// next llm call's prompt holds it.
		user, _ := json.Marshal(map[string]string{"role": "user", "content": s})
		e.llm.messages = append(e.llm.messages, user)
		return "event: " + s, true
	case <-t.C:
		return "no event", false
	case <-ctx.Done():
		return "", false
	}
}
