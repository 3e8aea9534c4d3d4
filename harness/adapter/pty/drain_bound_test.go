package pty

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// Guards the bounds of the drain between turns (ac84a58): a turn first
// takes the output that arrived since the last one, and a harness that
// never stops writing must not hold it there. The drain stops at the
// turn's context and at the turn's output_limit. Without those checks the
// drain keeps reading as long as output is waiting, and with a harness
// that floods its terminal (yes) and a turn's consumer that takes a
// millisecond per event (as a session writing its record may), output is
// always waiting: the turn never starts and never returns (the watchdog
// below). Each case starts the flood before the turn and lets it fill the
// output channel, so the drain sees it from its first read.
func TestDrainBetweenTurnsStopsAtItsBounds(t *testing.T) {
	// The flood starts once the test creates $FLOOD, after start-up.
	const flood = `printf 'ready> '; while [ ! -e "$FLOOD" ]; do sleep 0.05; done; exec yes 'the harness keeps writing between turns'`
	const watchdog = 15 * time.Second
	turn := func(t *testing.T, timeout time.Duration, limit int64) (time.Duration, error) {
		t.Helper()
		trigger := filepath.Join(t.TempDir(), "flood")
		a := start(t, launch(t, map[string]any{"prompt": `ready> $`}, map[string]string{"FLOOD": trigger}, "bash", "--norc", "--noprofile", "-c", flood))
		p := a.Process()
		if err := os.WriteFile(trigger, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		// Wait for a backlog: the output channel full (the reader stops
		// counting) after at least 256 KiB.
		for deadline, last := time.Now().Add(watchdog), int64(-1); ; time.Sleep(20 * time.Millisecond) {
			n := p.OutputBytes()
			if n >= 256<<10 && n == last {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no backlog of the flood: %d bytes", n)
			}
			last = n
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		slowEmit := func(wire.Event) { time.Sleep(time.Millisecond) }
		done := make(chan error, 1)
		began := time.Now()
		go func() {
			_, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "go", OutputLimit: limit}, slowEmit)
			done <- err
		}()
		select {
		case err := <-done:
			return time.Since(began), err
		case <-time.After(watchdog):
			a.Stop(context.Background()) // the terminal hangs up: the drain ends
			<-done
			t.Fatalf("the turn did not return within %v (its context: %v, its output limit: %d bytes): the drain kept reading the flood", watchdog, timeout, limit)
			return 0, nil
		}
	}
	t.Run("context", func(t *testing.T) {
		// No output limit: only the turn's context stops the drain.
		took, err := turn(t, time.Second, 0)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("turn: %v, want its deadline", err)
		}
		t.Logf("returned %v after the turn's 1 s deadline", took-time.Second)
	})
	t.Run("output_limit", func(t *testing.T) {
		// A context longer than the watchdog: only the limit stops it.
		took, err := turn(t, time.Minute, 256<<10)
		// The drain stops at the limit ("between turns"); were the flood
		// to pause, the drain would end and the turn's own limit apply.
		if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureOutputLimit {
			t.Fatalf("turn: %v, want output_limit", err)
		}
		t.Logf("%v after %v", err, took)
	})
}
