package pty

import (
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
)

// A turn's rows are emitted once they settle above the cursor (the TUI's
// spinner keeps its own row busy), not at the turn's end (the test agent
// waits for a file the test creates once it saw the first).
func TestTUIEmitsWithinTheTurn(t *testing.T) {
	if res := adaptertest.LiveTurn(t, tui(t, nil)); res.Response != "first\nlast" {
		t.Errorf("response %q, want %q", res.Response, "first\nlast")
	}
}
