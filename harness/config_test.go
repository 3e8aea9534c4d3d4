package harness

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := ParseConfig([]byte("harness:\n  command: [my-agent, --flag]\n"), "/base")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "my-agent" || cfg.Harness.Adapter != "jsonl" {
		t.Fatalf("name/adapter: %q %q", cfg.Name, cfg.Harness.Adapter)
	}
	if cfg.Episode.TurnTimeout.D() != 600*time.Second || cfg.Harness.StartupTimeout.D() != 30*time.Second ||
		cfg.Harness.StopGrace.D() != 5*time.Second || cfg.Episode.OutputLimit != DefaultOutputLimit || !cfg.Episode.EndsOnDone() {
		t.Fatalf("defaults: %+v", cfg)
	}
}

func TestParseConfigFull(t *testing.T) {
	y := `
name: calc
harness:
  command: [agent]
  env: {A: "1"}
  startup_timeout: 2.5
  options: {permission: deny}
tools:
  - name: db
    command: [python3, tools.py]
    call_timeout: 5s
  - name: remote
    url: http://127.0.0.1:9/mcp
    headers: {X-Key: k}
hide: ["grade*"]
rubrics:
  - {name: r, type: match, contains: ok, on: done, weight: 2}
episode: {turn_timeout: 90s, max_turns: 3, end_on_done: false, output_limit: 1MiB}
record_dir: records
`
	cfg, err := ParseConfig([]byte(y), "/base")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tools[0].Dir != "/base" || cfg.RecordDir != "/base/records" || cfg.Tools[0].CallTimeout.D() != 5*time.Second ||
		cfg.Tools[1].CallTimeout.D() != DefaultToolTimeout {
		t.Fatalf("tools/paths: %+v %q", cfg.Tools, cfg.RecordDir)
	}
	if cfg.Harness.StartupTimeout.D() != 2500*time.Millisecond || cfg.Episode.MaxTurns != 3 || cfg.Episode.EndsOnDone() ||
		cfg.Episode.OutputLimit != 1<<20 || cfg.Harness.Options["permission"] != "deny" {
		t.Fatalf("episode: %+v", cfg)
	}
	if _, err := json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := map[string]string{
		"harness:\n  command: [a]\n  comand: [b]\n":                  "line 3: unknown key comand",
		"harness:\n  command: [a]\nepisode:\n  turn_timeout: soon\n": "invalid duration",
		"name: x\n": "harness.command is required",
		"harness: {command: [a]}\ntools:\n  - name: t\n":                                                "exactly one of command or url",
		"harness: {command: [a]}\ntools:\n  - {name: t, url: ftp://x}\n":                                "url must be http",
		"harness: {command: [a]}\ntools:\n  - {name: t, url: http://x}\n  - {name: t, url: http://y}\n": "duplicate tool server name",
		"harness: {command: [a]}\nrubrics:\n  - {type: match}\n":                                        "exactly one of pattern or contains",
		"harness: {command: [a]}\nworkspace: {template: /nonexistent/seed}\n":                           "not a directory",
		"harness: {command: [a]}\nepisode: {max_turns: -1}\n":                                           "max_turns must not be negative",
	}
	for y, want := range cases {
		_, err := ParseConfig([]byte(y), "")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %q: err %v, want %q", y, err, want)
		}
	}
}

func TestObservationWireForm(t *testing.T) {
	resp := "sum=5 <ok>"
	one := 1.0
	obs := Observation{Reward: &one, Metadata: Metadata{EpisodeID: "e", TurnNumber: 1, Response: &resp,
		TurnEvents: []Event{NewEvent(EventToolCall, SourceBridge, map[string]any{"tool_name": "add"})}}}
	b, err := marshalNoEscape(obs) // how frames are written
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	json.Unmarshal(b, &wire)
	md, ok := wire["metadata"].(map[string]any)
	inner := wire["observation"].(map[string]any)["metadata"].(map[string]any)
	if !ok || md["response"] != resp || inner["response"] != resp || wire["done"] != false || wire["reward"] != 1.0 {
		t.Fatalf("wire form: %s", b)
	}
	evs := md["turn_events"].([]any)
	if ev := evs[0].(map[string]any); ev["type"] != "tool_call" || ev["source"] != "bridge" || ev["timestamp"].(float64) <= 0 {
		t.Fatalf("event: %v", ev)
	}
	if !strings.Contains(string(b), "<ok>") {
		t.Fatalf("HTML escaped: %s", b)
	}
	var back Observation
	if err := json.Unmarshal(b, &back); err != nil || back.ResponseText() != resp || *back.Reward != 1 || back.Metadata.TurnEvents[0].Type != EventToolCall {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

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
			{Type: EventToolCall, Timestamp: 1795940703.6084497, Data: map[string]any{"tool_name": "add", "arguments": json.RawMessage(`{"a":2,"b":[1,2]}`)}, Turn: 2, Source: SourceBridge},
			{Type: EventType("weird\"type"), Timestamp: 1, Data: nil},
			{Type: EventTurnComplete, Timestamp: 2.5, Data: map[string]any{"response": resp, "done": true, "n": nil}, Turn: 2, Source: SourceHarness},
		},
		ErrorType: ErrMaxTurns, Error: "episode reached max_turns (2)", Extra: map[string]any{"usage": map[string]any{"in": 1.0}},
	}}
	got, err := obs.AppendJSON(nil)
	if err != nil || !json.Valid(got) {
		t.Fatalf("invalid JSON %s: %v", got, err)
	}
	// Reference: the same data through encoding/json with plain maps.
	events := []any{}
	for _, e := range obs.Metadata.TurnEvents {
		m := map[string]any{"type": string(e.Type), "timestamp": e.Timestamp, "data": e.Data}
		if e.Data == nil {
			m["data"] = map[string]any{}
		}
		if e.Turn != 0 {
			m["turn"] = e.Turn
		}
		if e.Source != "" {
			m["source"] = string(e.Source)
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
