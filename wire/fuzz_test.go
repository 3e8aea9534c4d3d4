package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/harnessd/harnessd/internal/fuzzcheck"
	"github.com/harnessd/harnessd/wire"
)

// eventSeeds are events as producers and clients send them.
var eventSeeds = []string{
	`{"type":"text_output","timestamp":1790000000.25,"data":{"text":"hello <b>"},"turn":2,"source":"bridge"}`,
	`{"type":"tool_call","data":{"tool_name":"add","arguments":{"a":2,"b":3},"call_id":"c1","server":"env"}}`,
	`{"type":"tool_result","data":{"tool_name":"add","result":"5","error":"boom","call_id":"c1","duration_ms":1.5}}`,
	`{"type":"llm_request","data":{"model":"m","messages":[{"role":"user","content":"hi"}]}}`,
	`{"type":"llm_response","data":{"content":"hi","model":"m","finish_reason":"stop","usage":{"in":1}}}`,
	`{"type":"llm_chunk","data":{"content":"h","index":3,"thought":true,"message_id":"m1"}}`,
	`{"type":"error","data":{"message":"bad","recoverable":true}}`,
	`{"type":"turn_complete","data":{"response":"done","done":true,"cancelled":true,"stop_reason":"end_turn"}}`,
	`{"type":"future_type","data":{"x":[1,2,{"y":null}]}}`,
	`{"type":"text_output","data":null}`,
	`{"type":"text_output","data":{"text":5}}`,
	`{"type":"tool_call","data":[]}`,
	`{}`,
}

// FuzzEventDecode decodes an event (what client.Env and every consumer of
// the wire do) and, when that succeeds, checks that the event encodes and
// decodes back to the same bytes. DecodeChecked, what adapters apply to a
// harness's event data, must agree with the plain decoder: whatever it
// accepts decodes.
func FuzzEventDecode(f *testing.F) {
	for _, s := range eventSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e wire.Event
		if err := json.Unmarshal(b, &e); err != nil {
			if err.Error() == "" {
				t.Fatal("a decode error without a message")
			}
			return
		}
		fuzzcheck.Event(t, e)

		var w struct {
			Type wire.EventType  `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(b, &w) != nil || !w.Type.Valid() {
			return
		}
		p, err := wire.DecodeChecked(w.Type, w.Data)
		if err != nil {
			return
		}
		if p.EventType() != w.Type {
			t.Fatalf("DecodeChecked(%s) gave a %s payload", w.Type, p.EventType())
		}
		fuzzcheck.Emitted(t, wire.New(wire.OriginHarness, p))
	})
}
