package printer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/wire"
)

func TestEventLines(t *testing.T) {
	var b bytes.Buffer
	p := New(&b) // not a terminal: no colour
	boom := "boom"
	for _, e := range []wire.Event{
		{Type: wire.EventToolCall, Turn: 1, Origin: wire.OriginBridge, Data: &wire.ToolCall{ToolName: "add", Arguments: []byte(`{"a": 2}`)}},
		{Type: wire.EventToolResult, Turn: 1, Data: &wire.ToolResult{ToolName: "add", Result: "5"}},
		{Type: wire.EventToolResult, Turn: 1, Data: &wire.ToolResult{ToolName: "add", Error: &boom}},
		{Type: wire.EventTextOutput, Turn: 2, Data: &wire.TextOutput{Text: "two\nlines"}},
		{Type: wire.EventTurnComplete, Turn: 2, Data: &wire.TurnComplete{Response: "ok", Done: false, Cancelled: true}},
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
	New(&b).Observation("turn 3", &wire.Observation{Reward: &half, Done: true, Metadata: wire.Metadata{
		Response: &resp, ErrorType: wire.FailureHarnessCrashed, Error: "harness died", Exit: &wire.ExitStatus{Code: 3},
		RewardDetails: []wire.RewardDetail{{Name: "r", Weight: 0.5, Score: &one}}, StderrTail: "fatal\n",
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
