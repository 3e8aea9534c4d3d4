package kit

import "context"

// MessageWrite lets a mid-turn delivery (harness.Deliverer) that arrives
// while the turn's message is still being written wait for that write
// instead of finding no turn: the harness may act on the message (call a
// tool whose result triggers the delivery) before the adapter's write has
// returned. The zero value is idle. Its methods are called with the
// adapter's own lock held, except Wait.
type MessageWrite struct{ done chan struct{} }

// Begin marks the turn's message as being written.
func (w *MessageWrite) Begin() { w.done = make(chan struct{}) }

// End marks the write as over, written or failed; idle again.
func (w *MessageWrite) End() {
	if w.done != nil {
		close(w.done)
		w.done = nil
	}
}

// Pending returns a channel that closes when the write in progress ends,
// or nil when no write is in progress.
func (w *MessageWrite) Pending() <-chan struct{} { return w.done }

// Wait waits, without the adapter's lock, for a channel Pending returned
// (a nil one returns at once), or for ctx to end.
func Wait(ctx context.Context, pending <-chan struct{}) error {
	if pending == nil {
		return nil
	}
	select {
	case <-pending:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
