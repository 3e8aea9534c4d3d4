package streamjson

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// The result line was decoded whole into a map[string]any, and a tool_use
// block's input into Go values: a 4 MiB line (the line limit) of [0,0,...]
// in a field the adapter does not read, or in one it keeps (usage), or in
// a tool's input, allocated 164-200 MiB. Only the fields read are decoded,
// into Go values up to wire.PlainLimit. The control: a line of the same
// size whose field is a string, and the small fields still read as before.
func TestResultLineAllocatesInProportionToTheLine(t *testing.T) {
	const size = 4 << 20
	log := adapterkit.NewLogLimit(slog.New(slog.DiscardHandler))
	for _, c := range []struct{ name, line string }{
		{"a string", `{"type":"result","subtype":"success","result":"ok","pad":"` + strings.Repeat("a", size) + `"}`},
		{"an unread field of zeros", `{"type":"result","subtype":"success","result":"ok","pad":` + testbin.JSONZeros(size) + `}`},
		{"usage of zeros", `{"type":"result","subtype":"success","result":"ok","usage":{"a":` + testbin.JSONZeros(size) + `}}`},
		{"a tool input of zeros", `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"add","input":{"a":` + testbin.JSONZeros(size) + `}}]}}`},
	} {
		m := &mapper{a: &Adapter{log: log}, ctx: context.Background(), emit: func(wire.Event) {},
			server: "env", names: map[string]string{}, extra: map[string]any{}}
		line := []byte(c.line)
		got := testbin.Allocated(func() {
			if _, _, err := m.handle(line, false); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		})
		t.Logf("a line of %d MiB with %s allocated %d MiB", len(line)>>20, c.name, got>>20)
		if got > 6*uint64(len(line)) {
			t.Errorf("a line of %d MiB with %s allocated %d MiB (over 6× the line)", len(line)>>20, c.name, got>>20)
		}
		if b, err := json.Marshal(m.extra); err != nil || (c.name == "usage of zeros" && len(b) < size) {
			t.Errorf("%s: the extra does not encode back: %v", c.name, err)
		}
	}

	m := &mapper{a: &Adapter{log: log}, ctx: context.Background(), emit: func(wire.Event) {},
		names: map[string]string{}, extra: map[string]any{}}
	res, done, err := m.handle([]byte(`{"type":"result","subtype":"success","result":"fine","num_turns":2,"usage":{"in":3},"stop_reason":null,"other":[1]}`), false)
	if u, _ := res.Extra["usage"].(map[string]any); err != nil || !done || res.Response != "fine" || res.Extra["num_turns"] != 2.0 ||
		u["in"] != 3.0 || res.Extra["subtype"] != "success" {
		t.Errorf("a small result line: %+v %v %v", res, done, err)
	}
	if _, ok := res.Extra["stop_reason"]; ok {
		t.Errorf("a null field is kept: %#v", res.Extra)
	}
	r, err := resultFields([]byte(`{"\u0073ubtype":"error_x","errors":["a",1],"pad":[0]}`))
	if err != nil || r["subtype"] != "error_x" || len(r) != 2 {
		t.Errorf("a result line with escaped keys: %#v %v", r, err)
	}
	if _, err := resultFields([]byte(`{"subtype":`)); err == nil || err.Error() != "unexpected end of JSON input" {
		t.Errorf("a cut result line: %v", err)
	}
}
