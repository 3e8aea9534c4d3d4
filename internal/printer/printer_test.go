package printer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/rubric"
)

func TestEventLines(t *testing.T) {
	var b bytes.Buffer
	p := New(&b) // not a terminal: no colour
	for _, e := range []harness.Event{
		{Type: harness.EventToolCall, Turn: 1, Source: harness.SourceBridge, Data: map[string]any{"tool_name": "add", "arguments": map[string]any{"a": 2}}},
		{Type: harness.EventToolResult, Turn: 1, Data: map[string]any{"tool_name": "add", "result": "5"}},
		{Type: harness.EventToolResult, Turn: 1, Data: map[string]any{"tool_name": "add", "error": "boom"}},
		{Type: harness.EventTextOutput, Turn: 2, Data: map[string]any{"text": "two\nlines"}},
		{Type: harness.EventTurnComplete, Turn: 2, Data: map[string]any{"response": "ok", "done": false, "cancelled": true}},
	} {
		p.Event(e)
	}
	want := []string{
		`  [turn 1] tool_call     add {"a":2} (bridge)`,
		`  [turn 1] tool_result   add → 5`,
		`  [turn 1] tool_result   add ✗ boom`,
		`  [turn 2] text_output   two⏎lines`,
		`  [turn 2] turn_complete response="ok" done=false cancelled=true`,
	}
	if got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestObservationLine(t *testing.T) {
	var b bytes.Buffer
	one, half := 1.0, 0.5
	resp := "hi"
	New(&b).Observation("turn 3", &harness.Observation{Reward: &half, Done: true, Metadata: harness.Metadata{
		Response: &resp, ErrorType: harness.ErrHarnessCrashed, Error: "harness died", Exit: &process.ExitStatus{Code: 3},
		RewardDetails: []rubric.Result{{Name: "r", Weight: 0.5, Score: &one}}, StderrTail: "fatal\n",
	}})
	for _, s := range []string{`turn 3 reward=0.5 done=true response="hi" error_type=harness_crashed error="harness died" exit=`, "rubric r", "score=1 weight=0.5", "stderr tail: fatal⏎"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("missing %q in:\n%s", s, b.String())
		}
	}
	if Clip("abcdef", 3) != "abc…" || Compact(map[string]int{"a": 1}) != `{"a":1}` {
		t.Error("Clip or Compact")
	}
}
