package streamjson

import (
	"testing"

	"github.com/harnessd/harnessd/wire"
)

// TestExitRightAfterTurnIsHarnessExited: a harness that exits 0 right after
// its result is gone before the next user message is taken, however the
// race with the next turn falls: harness_exited, never harness_crashed.
// The race is lost or won at random, so the test runs it 20 times.
func TestExitRightAfterTurnIsHarnessExited(t *testing.T) {
	for i := range 20 {
		a := started(t, nil)
		if _, _, err := turn(t, a, 1, "reply bye;;exit 0"); err != nil {
			t.Fatalf("run %d, turn 1: %v", i, err)
		}
		_, _, err := turn(t, a, 2, "hello?")
		if f := failure(t, err); f.Type != wire.FailureHarnessExited || f.Exit == nil || f.Exit.Code != 0 {
			t.Fatalf("run %d, turn 2: %#v", i, f)
		}
	}
}
