package eventlog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/wire"
)

// An event whose data a trainer's JSON decoder could not take (an
// agent's tool input 2,000 levels deep, a 5,000-digit number: what an ACP
// or stream-json agent, a tool server or a model may produce, which the
// log took as it came) is kept as the daemon's recoverable error naming
// it; lone surrogate escapes in raw values become \ufffd. Controls: the
// same call 100 levels deep, and a valid pair, are kept as they came.
func TestEventsATrainerCannotDecodeAreReplaced(t *testing.T) {
	nested := func(n int) json.RawMessage {
		return json.RawMessage(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
	}
	l := newTestLog(0, 0)
	l.BeginTurn(1, nil)
	l.Add(wire.New(wire.OriginHarness, &wire.ToolCall{ToolName: "deep", Arguments: nested(2000)}))
	l.Add(wire.New(wire.OriginBridge, &wire.ToolResult{ToolName: "big", Result: json.RawMessage(`{"n":` + strings.Repeat("7", 5000) + `}`)}))
	l.Add(wire.New(wire.OriginHarness, &wire.ToolCall{ToolName: "fine", Arguments: nested(100)}))
	l.Add(wire.New(wire.OriginHarness, &wire.ToolCall{ToolName: "odd", Arguments: json.RawMessage(`{"s":"a\ud800b","ok":"\ud83d\ude00"}`)}))
	evs := l.EndTurn()
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4: %v", len(evs), evs)
	}
	for i, want := range []string{"dropped a tool_call event from harness: its data has arrays and objects nested deeper than 128 levels",
		"dropped a tool_result event from bridge: its data has a number literal longer than 1000 characters"} {
		e, ok := evs[i].Data.(*wire.Error)
		if !ok || evs[i].Origin != wire.OriginDaemon || !e.Recoverable || !strings.Contains(e.Message, want) || evs[i].Turn != 1 {
			t.Errorf("event %d: %+v, want the daemon's error %q", i, evs[i], want)
		}
	}
	if c, ok := evs[2].Data.(*wire.ToolCall); !ok || string(c.Arguments) != string(nested(100)) {
		t.Errorf("control: the call 100 levels deep became %+v", evs[2])
	}
	c, ok := evs[3].Data.(*wire.ToolCall)
	if !ok || evs[3].Origin != wire.OriginHarness || evs[3].Turn != 1 {
		t.Fatalf("the call with a lone surrogate became %+v", evs[3])
	}
	var args map[string]string
	if err := json.Unmarshal(c.Arguments, &args); err != nil || args["s"] != "a\ufffdb" || args["ok"] != "\U0001F600" ||
		strings.Contains(string(c.Arguments), `\ud800`) {
		t.Errorf("arguments %s (%v), want the lone surrogate as \\ufffd and the pair kept", c.Arguments, err)
	}
}
