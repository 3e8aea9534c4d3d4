package console

import (
	"testing"

	"github.com/harnessd/harnessd/wire"
)

// BenchmarkTurnEntry is what the console spends per turn to keep its
// observation in the window: entryOf, whose size (for the window's byte
// bound) encodes the slim observation without its response.
func BenchmarkTurnEntry(b *testing.B) {
	resp := "the harness's answer to this turn, a few hundred bytes long. " +
		"It names a file, a function and a test, and says the test passes now."
	reward := 1.0
	plain := wire.Metadata{Response: &resp, TurnNumber: 7, EpisodeID: "0b7f3c1e-2d4a-4c8e-9f6b-1a2b3c4d5e6f"}
	extra := plain
	extra.Extra = map[string]any{"tests": map[string]any{"passed": 12, "failed": 0}}
	for _, c := range []struct {
		name string
		md   wire.Metadata
	}{{"plain", plain}, {"extra", extra}} {
		b.Run(c.name, func(b *testing.B) {
			msg := wire.Record{Kind: wire.RecordMessage, Time: wire.Now(), Turn: 7, Content: &resp}
			rec := wire.Record{Kind: wire.RecordObservation, Time: wire.Now(), Turn: 7, Observation: &wire.Observation{Reward: &reward, Metadata: c.md}}
			b.ReportAllocs()
			for b.Loop() {
				_ = entryOf(&msg, rec)
			}
		})
	}
}
