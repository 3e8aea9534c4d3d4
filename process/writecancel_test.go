package process

import (
	"context"
	"testing"
)

// TestWriteAfterACancelledWrite: a write whose context is cancelled as it
// completes must not leave its cancel (a past write deadline) to land on
// the next write. Each round cancels a write's context concurrently with
// it, then writes with a context that never ends: that write must succeed.
func TestWriteAfterACancelledWrite(t *testing.T) {
	s := newSup(t, Options{})
	p := startSh(t, s, shSpec(`cat >/dev/null`))
	line := []byte("x")
	for i := range 3000 {
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		p.WriteLine(ctx, line) // may fail: its context ended
		if err := p.WriteLine(context.Background(), line); err != nil {
			t.Fatalf("round %d: a write after a cancelled one failed: %v", i, err)
		}
	}
}
