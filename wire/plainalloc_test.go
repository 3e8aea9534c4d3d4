package wire_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// A harness's tool_result and llm_response events carry values of any JSON
// kind (result, structured_content, content), which were decoded into Go
// values: a 4 MiB line of [0,0,...] (the adapters' line limit) allocated
// 170 MiB and kept 32 MiB of values alive as long as its event. A value
// beyond wire.PlainLimit is now kept as raw JSON; the control is that a
// small one still decodes into plain values, and that both encode alike.
func TestHarnessValuesAllocateInProportionToTheLine(t *testing.T) {
	const size = 4 << 20
	for _, c := range []struct {
		t    wire.EventType
		data string
	}{
		{wire.EventToolResult, `{"tool_name":"x","result":` + testbin.JSONZeros(size) + `}`},
		{wire.EventToolResult, `{"tool_name":"x","result":"ok","structured_content":{"a":` + testbin.JSONZeros(size) + `}}`},
		{wire.EventLLMResponse, `{"content":` + testbin.JSONZeros(size) + `,"model":"m"}`},
	} {
		measure(t, c.t, []byte(c.data), testbin.JSONZeros(size))
	}

	p, err := wire.DecodeChecked(wire.EventToolResult, []byte(`{"tool_name":"x","result":[1,{"a":"b"}],"structured_content":{"n":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := p.(*wire.ToolResult)
	if l, ok := r.Result.([]any); !ok || len(l) != 2 || l[0] != 1.0 {
		t.Errorf("a small result is not decoded: %#v", r.Result)
	}
	if m, ok := r.StructuredContent.(map[string]any); !ok || m["n"] != 2.0 {
		t.Errorf("small structured content is not decoded: %#v", r.StructuredContent)
	}
	big := wire.Plain([]byte(testbin.JSONZeros(wire.PlainLimit + 2)))
	if _, ok := big.(json.RawMessage); !ok {
		t.Errorf("Plain of %d bytes gave a %T, want raw JSON", wire.PlainLimit+2, big)
	}
	if s, ok := wire.Plain([]byte(`"` + strings.Repeat("a", 2*wire.PlainLimit) + `"`)).(string); !ok || len(s) != 2*wire.PlainLimit {
		t.Errorf("Plain of a long string does not decode it")
	}
	if wire.Plain([]byte(`[0,`)) != nil || wire.Plain([]byte(` null `)) != nil {
		t.Errorf("Plain of invalid JSON or null is not nil")
	}
	if _, err := wire.DecodeChecked(wire.EventToolResult, []byte(`{"tool_name":"x","result":[1e400]}`)); err == nil ||
		!strings.Contains(err.Error(), "a number literal beyond float64's range (1e400)") {
		t.Errorf("a result beyond float64: %v", err)
	}
}

// measure decodes data, the data of a harness event of type typ whose value
// is value, and checks what it allocated and what the payload keeps.
func measure(t *testing.T, typ wire.EventType, data []byte, value string) {
	t.Helper()
	var p wire.Payload
	var err error
	base := testbin.LiveHeap()
	got := testbin.Allocated(func() { p, err = wire.DecodeChecked(typ, data) })
	kept := int64(testbin.LiveHeap()) - int64(base)
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	t.Logf("a %s of %d MiB allocated %d MiB and keeps %d MiB", typ, len(data)>>20, got>>20, kept>>20)
	if got > 4*uint64(len(data)) || kept > 2*int64(len(data)) {
		t.Errorf("a %s of %d MiB allocated %d MiB and keeps %d MiB (over 4× and 2× the line)", typ, len(data)>>20, got>>20, kept>>20)
	}
	b, err := json.Marshal(wire.New(wire.OriginHarness, p))
	if err != nil || !bytes.Contains(b, []byte(value)) {
		t.Errorf("a %s of %d MiB does not encode its value back: %v", typ, len(data)>>20, err)
	}
	runtime.KeepAlive(p)
	runtime.KeepAlive(data) // kept is what the payload adds to the line
}
