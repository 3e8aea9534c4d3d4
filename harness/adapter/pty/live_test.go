package pty

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// A turn's events are emitted as the terminal shows them, not at the
// turn's end: the agent says its first line, then waits for a file the
// test creates only once the line was emitted. The message is longer than
// the terminal is wide, so its echo wraps.
func TestTUIEmitsWithinTheTurn(t *testing.T) {
	a := tui(t, nil)
	gate := filepath.Join(t.TempDir(), strings.Repeat("g", 150))
	events := make(chan wire.Event, 64)
	done := make(chan error, 1)
	var res harness.TurnResult
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var err error
		res, err = a.Turn(ctx, harness.TurnInput{Number: 1, Message: "reply first;;waitfor " + gate + ";;reply last", OutputLimit: 1 << 20}, func(e wire.Event) {
			select {
			case events <- e:
			default:
			}
		})
		done <- err
	}()
	timeout := time.After(30 * time.Second)
	for seen := false; !seen; {
		select {
		case e := <-events:
			t.Logf("emitted %s %+v", e.Type, e.Data)
			if to, ok := e.Data.(*wire.TextOutput); ok && strings.Contains(to.Text, "first") {
				seen = true
			}
		case err := <-done:
			t.Fatalf("the turn ended (%v) before its first line was emitted", err)
		case <-timeout:
			t.Fatal("the turn's first line was not emitted within 30 s")
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.Response != "first\nlast" {
		t.Errorf("response %q, want %q", res.Response, "first\nlast")
	}
}
