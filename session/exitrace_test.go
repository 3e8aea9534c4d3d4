package session_test

import (
	"testing"

	"github.com/harnessd/harnessd/wire"
)

// TestExitRightAfterTurnIsHarnessExited steps again at once after a turn
// whose harness exits 0 right after answering: the exit comes before the
// next turn's message is taken, whether the session notices it before the
// turn (not alive), while writing the message (nobody reads the pipe any
// more) or at the end of the harness's output (the message lies unread in
// the pipe). Each must be harness_exited with the exit status, never
// harness_crashed "mid-turn". The race is lost or won at random, so the
// test runs it 20 times.
func TestExitRightAfterTurnIsHarnessExited(t *testing.T) {
	s := newSession(t, testConfig(t))
	for i := range 20 {
		reset(t, s)
		if o := step(t, s, "reply bye;;exit 0"); o.Done || o.ResponseText() != "bye" {
			t.Fatalf("run %d, turn 1: %+v", i, o.Metadata)
		}
		o := step(t, s, "hello?")
		if o.Metadata.ErrorType != wire.FailureHarnessExited || o.Metadata.Exit == nil || o.Metadata.Exit.Code != 0 || !o.Done {
			t.Fatalf("run %d, turn 2: error_type %q error %q exit %+v", i, o.Metadata.ErrorType, o.Metadata.Error, o.Metadata.Exit)
		}
	}
}
