package jsonl

import (
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
)

// A turn's events are emitted as the harness writes them, not at the
// turn's end (the test agent waits for a file the test creates once it
// saw the first).
func TestEmitsWithinTheTurn(t *testing.T) {
	adaptertest.LiveTurn(t, started(t))
}
