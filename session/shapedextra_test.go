package session

import (
	"encoding/json"
	"strings"
	"testing"
)

// A turn's extra fields (an adapter's, as an ACP agent's stop reason and
// usage) reach the trainer only in a shape its decoder takes: a value
// nested 2,000 levels deep becomes a note, a lone surrogate escape
// \ufffd. Controls: plain values pass, and extras that all pass are
// returned as they are.
func TestTurnExtrasATrainerCannotDecodeAreReplaced(t *testing.T) {
	deep := json.RawMessage(strings.Repeat("[", 2000) + strings.Repeat("]", 2000))
	in := map[string]any{"stop_reason": "end_turn", "usage": map[string]any{"in": 3}, "deep": deep, "odd": json.RawMessage(`"a\ud800b"`),
		"huge": json.RawMessage(`{"n":1e400}`)}
	out := shapedExtra(in)
	if out["stop_reason"] != "end_turn" || out["usage"].(map[string]any)["in"] != 3 {
		t.Errorf("control: plain values became %v", out)
	}
	if s, _ := out["deep"].(string); !strings.Contains(s, "dropped by harnessd: arrays and objects nested deeper than 128 levels") {
		t.Errorf("deep value became %.80v", out["deep"])
	}
	if s, _ := out["huge"].(string); !strings.Contains(s, "dropped by harnessd: a number literal beyond float64's range") {
		t.Errorf("a number beyond float64 became %.80v", out["huge"])
	}
	if out["odd"] != "a\ufffdb" {
		t.Errorf("lone surrogate value became %q", out["odd"])
	}
	if _, ok := in["deep"].(json.RawMessage); !ok {
		t.Error("the adapter's map was changed in place")
	}
	plain := map[string]any{"stop_reason": "end_turn"}
	if got := shapedExtra(plain); len(got) != 1 || got["stop_reason"] != "end_turn" {
		t.Errorf("control: %v", got)
	}
}
