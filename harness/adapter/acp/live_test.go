package acp

import (
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
)

// A turn's session/update notifications become events as they arrive, not
// at the prompt's answer (the test agent waits for a file the test creates
// once it saw the first).
func TestEmitsWithinTheTurn(t *testing.T) {
	adaptertest.LiveTurn(t, started(t))
}
