package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEventDefaults(t *testing.T) {
	var e Event
	if err := json.Unmarshal([]byte(`{"type":"text_output"}`), &e); err != nil || e.Timestamp <= 0 || e.Data == nil {
		t.Fatalf("%+v %v", e, err)
	}
	if b, _ := json.Marshal(Event{Type: EventError}); !strings.Contains(string(b), `"data":{}`) {
		t.Fatalf("nil data: %s", b)
	}
	if EventType("bogus").Valid() || !EventTurnComplete.Valid() {
		t.Fatal("Valid")
	}
}

// The one-pass observation encoder must mean exactly what encoding/json
// would write for the same data.
func TestObservationEncodingMatchesEncodingJSON(t *testing.T) {
	resp := "quote \" backslash \\ <tag> & ünïcode 😀\n\ttab"
	half := 0.5
	obs := Observation{Reward: &half, Done: true, Metadata: Metadata{
		EpisodeID: "ep\"1", TurnNumber: 2, Response: &resp, HarnessDone: true,
		TurnEvents: []Event{
			{Type: EventToolCall, Timestamp: 1795940703.6084497, Data: &ToolCall{ToolName: "add", Arguments: json.RawMessage(`{"a":2,"b":[1,2]}`)}, Turn: 2, Origin: OriginBridge},
			{Type: EventType("weird\"type"), Timestamp: 1, Data: nil},
			{Type: EventTurnComplete, Timestamp: 2.5, Data: &TurnComplete{Response: resp, Done: true, Extra: Extra{"n": nil}}, Turn: 2, Origin: OriginHarness},
		},
		ErrorType: FailureMaxTurns, Error: "episode reached max_turns (2)", Extra: map[string]any{"usage": map[string]any{"in": 1.0}},
	}}
	got, err := obs.AppendJSON(nil)
	if err != nil || !json.Valid(got) {
		t.Fatalf("invalid JSON %s: %v", got, err)
	}
	// Reference: the same data through encoding/json with plain maps.
	data := []any{
		map[string]any{"tool_name": "add", "arguments": map[string]any{"a": 2, "b": []int{1, 2}}},
		map[string]any{},
		map[string]any{"response": resp, "done": true, "n": nil},
	}
	events := []any{}
	for i, e := range obs.Metadata.TurnEvents {
		m := map[string]any{"type": string(e.Type), "timestamp": e.Timestamp, "data": data[i]}
		if e.Turn != 0 {
			m["turn"] = e.Turn
		}
		if e.Origin != "" {
			m["source"] = string(e.Origin)
		}
		events = append(events, m)
	}
	md := map[string]any{"episode_id": "ep\"1", "turn_number": 2, "response": resp, "harness_done": true, "turn_events": events,
		"error_type": "max_turns", "error": "episode reached max_turns (2)", "extra": obs.Metadata.Extra}
	want, _ := json.Marshal(map[string]any{"observation": map[string]any{"metadata": md}, "reward": 0.5, "done": true, "metadata": md})
	var a, b any
	json.Unmarshal(got, &a)
	json.Unmarshal(want, &b)
	ga, _ := json.Marshal(a)
	wb, _ := json.Marshal(b)
	if string(ga) != string(wb) {
		t.Fatalf("one-pass encoding differs:\n got %s\nwant %s", ga, wb)
	}
	if ev, _ := json.Marshal(obs.Metadata.TurnEvents[1]); !json.Valid(ev) || !strings.Contains(string(ev), `"weird\"type"`) {
		t.Fatalf("event with a quote in its type: %s", ev)
	}
}
