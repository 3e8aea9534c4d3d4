package process

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A write queued behind another keeps its own deadline: the child reads
// nothing, a first write without a deadline blocks on the full pipe, and a
// second write with a 200 ms deadline returns at it (it waited for the
// first's lock without one, until the episode ended). The control: with a
// reading child the same second write succeeds.
func TestWriteBehindABlockedWriteKeepsItsDeadline(t *testing.T) {
	s := newSup(t, Options{})
	second := func(t *testing.T, command string, reads bool) error {
		p, err := s.Start(Spec{Name: "writer", Path: "/bin/sh", Args: []string{"-c", command}, Env: DefaultEnviron(nil)})
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		t.Cleanup(func() { p.Stop(context.Background(), 0) })
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		big := []byte(strings.Repeat("x", 1<<20)) // beyond any pipe's buffer
		go p.Write(ctx, big)                      // blocks while the child does not read
		if !reads {
			// The first write holds the lock for good once it has it (a
			// reading child's ends, and the second comes after it).
			deadline := time.Now().Add(10 * time.Second)
			for len(p.writeMu) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the first write never took the write lock")
				}
				time.Sleep(time.Millisecond)
			}
		}
		wctx, wcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer wcancel()
		done := make(chan error, 1)
		go func() { done <- p.Write(wctx, []byte("second\n")) }()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("the second write did not return 20 s after its 200 ms deadline")
			return nil
		}
	}
	if err := second(t, "cat >/dev/null", true); err != nil {
		t.Fatalf("the control, a child that reads: %v", err)
	}
	if err := second(t, "sleep 60", false); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("behind a blocked write: %v, want its deadline", err)
	}
}
