package process

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
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

// TestWriteWithAnEndedContextWritesNothing checks that a write whose
// context has ended fails with its error and leaves nothing in the pipe,
// though the pipe would take it at once (the fast path is not tried).
func TestWriteWithAnEndedContextWritesNothing(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.WriteLine(ctx, []byte(`{"type":"message","turn":1,"content":"reply first"}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("write with a cancelled context: %v, want context.Canceled", err)
	}
	out := strings.Join(turn(t, p, "reply second"), "\n")
	if strings.Contains(out, "first") || !strings.Contains(out, "second") {
		t.Fatalf("the harness read %s: the cancelled write reached it", out)
	}
}

// TestWriteThatFitsThePipeAllocatesNothing checks that a line the pipe
// takes at once is written without a deadline or a cancel's registration
// (a context.AfterFunc, its channel: several allocations per write): only
// WriteLine's own buffer is allocated.
func TestWriteThatFitsThePipeAllocatesNothing(t *testing.T) {
	s := newSup(t, Options{})
	p := startSh(t, s, shSpec(`cat >/dev/null`))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	line := []byte("x")
	allocs := testing.AllocsPerRun(200, func() {
		if err := p.WriteLine(ctx, line); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per write, want at most 1 (WriteLine's buffer)", allocs)
	}
}
