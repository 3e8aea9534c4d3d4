package acp

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// The agent's session/update values (a tool call's rawInput, kept with the
// call for two turns; its rawOutput; a plan; a usage_update; a chunk's
// _meta) were decoded into Go values: 4 MiB of [0,0,...] (the line limit)
// allocated 160 MiB. They are decoded up to wire.PlainLimit and kept as raw
// JSON beyond. The control: an update of the same size whose value is a
// string, and small values decoded as before. The updates here are 1 MiB:
// what tells is the allocation per byte of the update (about 40 before,
// under 16 after), and each megabyte costs seconds under the race
// detector (4 MiB took 14 s).
func TestUpdatesAllocateInProportionToTheLine(t *testing.T) {
	const size = 1 << 20
	z := testbin.JSONZeros(size)
	log := adapterkit.NewLogLimit(slog.New(slog.DiscardHandler))
	for _, c := range []struct{ name, update string }{
		{"a string", `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + strings.Repeat("a", size) + `"}}`},
		{"a tool call's input", `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"t","rawInput":{"a":` + z + `}}`},
		{"a tool call's output", `{"sessionUpdate":"tool_call","toolCallId":"c2","status":"completed","rawOutput":{"a":` + z + `}}`},
		{"a plan", `{"sessionUpdate":"plan","entries":` + z + `}`},
		{"a usage update", `{"sessionUpdate":"usage_update","used":1,"pad":` + z + `}`},
		{"a chunk's meta", `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"usage":{"in":1},"pad":` + z + `}}`},
	} {
		var events []wire.Event
		ts := newTurnState(func(e wire.Event) { events = append(events, e) }, log, "s", map[string]*toolCall{})
		params := []byte(`{"sessionId":"s","update":` + c.update + `}`)
		got := testbin.Allocated(func() { ts.notify("session/update", params) })
		t.Logf("an update of %d MiB with %s allocated %d MiB", len(params)>>20, c.name, got>>20)
		if got > 16*uint64(len(params)) { // at 4 MiB: 196 MiB before, 24-32 after (buffer growth varies)
			t.Errorf("an update of %d MiB with %s allocated %d MiB (over 16× the update)", len(params)>>20, c.name, got>>20)
		}
		if len(events) == 0 && c.name != "a usage update" {
			t.Errorf("%s: no event", c.name)
		}
		for _, e := range events {
			if _, err := json.Marshal(e); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
		if c.name == "a chunk's meta" && ts.usage == nil {
			t.Errorf("a large _meta's usage is not kept")
		}
	}

	ts := newTurnState(func(wire.Event) {}, log, "s", map[string]*toolCall{})
	ts.notify("session/update", []byte(`{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":100,"size":1000}}`))
	ts.notify("session/update", []byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c1","rawInput":{"a":2}}}`))
	if u, _ := ts.usageUpdate.(map[string]any); u["used"] != 100.0 {
		t.Errorf("a small usage_update: %#v", ts.usageUpdate)
	}
	if a, _ := ts.calls["c1"].arguments().(map[string]any); a["a"] != 2.0 {
		t.Errorf("a small tool input: %#v", ts.calls["c1"].arguments())
	}
}
