package oneshot

import (
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
)

// A turn process's stdout lines become events while it runs, not when it
// exits, in each format (the test agent waits for a file the test creates
// once it saw the first).
func TestEmitsWithinTheTurn(t *testing.T) {
	for _, format := range []string{FormatText, FormatJSONL, FormatCodex, FormatGemini, FormatOpenCode} {
		t.Run(format, func(t *testing.T) {
			adaptertest.LiveTurn(t, agent(t, format, nil))
		})
	}
}
