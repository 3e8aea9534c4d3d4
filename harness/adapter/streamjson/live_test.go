package streamjson

import (
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
)

// A turn's assistant lines become events as they arrive, not at its
// result line (the test agent waits for a file the test creates once it
// saw the first).
func TestEmitsWithinTheTurn(t *testing.T) {
	adaptertest.LiveTurn(t, started(t, nil))
}
