package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/session"
)

// TestBackToBackResetsAreEachHandedAStandby: with warm: 1, resets one
// right after the other (as a server makes them: background work after
// the reply, session.AfterReply) are each handed a standby: a reset that
// arrives while the next standby is still being prepared waits for it
// instead of finding the pool empty and starting a cold episode. Each
// must come within the harness's start-up budget.
func TestBackToBackResetsAreEachHandedAStandby(t *testing.T) {
	for _, iso := range []string{config.IsolationProcess, config.IsolationSandbox} {
		t.Run(iso, func(t *testing.T) {
			edit := func(c *config.Config) { c.Warm = 1 }
			var s *session.Session
			if iso == config.IsolationSandbox {
				s = sandboxed(t, edit)
			} else {
				cfg := testConfig(t)
				cfg.Isolation = iso
				edit(cfg)
				s = newSession(t, cfg)
			}
			for i := range 12 {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				rctx, replied := session.AfterReply(ctx)
				obs, err := s.Reset(rctx, session.ResetOptions{})
				replied()
				cancel()
				if err != nil || obs.Done {
					t.Fatalf("reset %d: %v %+v", i, err, obs)
				}
				if !obs.Metadata.Standby {
					t.Fatalf("reset %d, back to back with the one before, was not handed a standby", i)
				}
			}
		})
	}
}

// gatedHarness makes cfg's harness append a line to marks when it starts
// and then wait, before it runs the test agent, for a line on the FIFO
// gate (one line lets one harness through). It returns the gate, opened
// for writing (never blocking), closed when the test ends.
func gatedHarness(t *testing.T, cfg *config.Config, marks string) *os.File {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	if err := unix.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(gate, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	agent := cfg.Harness.Command
	script := fmt.Sprintf(`echo started >> %q && read _ < %q && exec "$@"`, marks, gate)
	cfg.Harness.Command = append([]string{"/bin/sh", "-c", script, "gated"}, agent...)
	return w
}

// startMarks counts the lines of marks (gatedHarness's starts).
func startMarks(t *testing.T, marks string) int {
	t.Helper()
	b, err := os.ReadFile(marks)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// waitMarks waits until marks has n lines, failing after 20 seconds.
func waitMarks(t *testing.T, marks string, n int, why string) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for startMarks(t, marks) < n {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%d harness starts after 20 s, want %d: %s", startMarks(t, marks), n, why)
		}
	}
}

// TestAResetThatWaitsStartsTheNextStandbyAtOnce: with warm: 1, a reset
// whose standby is still starting (its harness held at a gate) starts the
// next standby while it waits, before it replies: a reset right after it
// finds that one on its way instead of waiting for a whole start-up that
// began only once the first replied. Without it the second harness starts
// only after the gate opens and the first reset's background work runs.
func TestAResetThatWaitsStartsTheNextStandbyAtOnce(t *testing.T) {
	cfg := testConfig(t)
	cfg.Isolation = config.IsolationProcess
	cfg.Warm = 1
	marks := filepath.Join(t.TempDir(), "marks")
	gate := gatedHarness(t, cfg, marks)
	s := newSession(t, cfg)
	waitMarks(t, marks, 1, "the first standby's harness")

	type answer struct {
		standby bool
		err     error
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rctx, replied := session.AfterReply(ctx)
		obs, err := s.Reset(rctx, session.ResetOptions{})
		replied()
		if err == nil && obs.Done {
			err = fmt.Errorf("the reset failed: %+v", obs.Metadata)
		}
		done <- answer{err == nil && obs.Metadata.Standby, err}
	}()
	waitMarks(t, marks, 2, "the next standby did not start while the reset waited for its own")
	select {
	case a := <-done:
		t.Fatalf("the reset returned with its standby's harness held at the gate: %+v", a)
	default:
	}
	if _, err := gate.WriteString("go\ngo\n"); err != nil {
		t.Fatal(err)
	}
	if a := <-done; a.err != nil || !a.standby {
		t.Fatalf("the reset: standby %v, %v", a.standby, a.err)
	}
	obs, err := s.Reset(context.Background(), session.ResetOptions{})
	if err != nil || obs.Done || !obs.Metadata.Standby {
		t.Fatalf("the reset after it: %v %+v", err, obs)
	}
}
