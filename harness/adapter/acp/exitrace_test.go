package acp

import (
	"testing"

	"github.com/harnessd/harnessd/wire"
)

// TestExitRightAfterTurnIsHarnessExited: an agent that exits 0 right after
// answering a prompt is gone before the next prompt is taken, however the
// race with the next turn falls: harness_exited, never harness_crashed.
// The race is lost or won at random, so the test runs it 20 times.
func TestExitRightAfterTurnIsHarnessExited(t *testing.T) {
	for i := range 20 {
		a := started(t)
		mustTurn(t, a, 1, "reply bye;;exit 0")
		_, _, err := turn(t, a, 2, "hello?")
		if f := failure(t, err); f.Type != wire.FailureHarnessExited || f.Exit == nil || f.Exit.Code != 0 {
			t.Fatalf("run %d, turn 2: %#v", i, f)
		}
	}
}
