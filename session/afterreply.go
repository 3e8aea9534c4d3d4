package session

import (
	"context"
	"sync"
)

// replyGateKey carries an AfterReply gate in a context.
type replyGateKey struct{}

// AfterReply returns a context for a Reset (or Step) whose background work
// — retiring the previous episode, preparing the next — starts only once
// release is called: the caller calls it after writing the operation's
// reply, so that on a small machine that work does not compete with the
// reply (a warm standby's handover is a fraction of a millisecond; the
// teardown it causes is not). The caller must call release (defer it);
// Close starts work still held back. Without the gate the work starts as
// the operation returns.
func AfterReply(ctx context.Context) (context.Context, func()) {
	gate := make(chan struct{})
	var once sync.Once
	return context.WithValue(ctx, replyGateKey{}, gate), func() { once.Do(func() { close(gate) }) }
}

// startAfter starts the background work an operation queued (afterOp):
// once ctx's AfterReply gate opens, or at once without one.
func (s *Session) startAfter(ctx context.Context, after []func()) {
	if len(after) == 0 {
		return
	}
	gate, _ := ctx.Value(replyGateKey{}).(chan struct{})
	if gate == nil {
		runAll(after)
		return
	}
	s.mu.Lock()
	s.held = append(s.held, after...)
	s.mu.Unlock()
	go func() {
		<-gate
		s.startHeld()
	}()
}

// startHeld starts the work held back for a reply (and, from Close, what
// a caller never released).
func (s *Session) startHeld() {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	runAll(held)
}

func runAll(fs []func()) {
	for _, f := range fs {
		f()
	}
}
