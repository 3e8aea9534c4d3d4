package jsonl

import (
	"errors"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fuzzcheck"
	"github.com/harnessd/harnessd/wire"
)

// FuzzLine maps one harness stdout line as Turn does: an event that is
// well formed, the turn's end with a result that encodes, nothing (blank
// and ready lines), or a protocol error.
func FuzzLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"ready"}`,
		`{"type":"text_output","data":{"text":"hello"}}`,
		`{"type":"tool_call","data":{"tool_name":"add","arguments":{"a":1},"call_id":"c1"}}`,
		`{"type":"tool_result","data":{"tool_name":"add","result":"2","error":null,"call_id":"c1"}}`,
		`{"type":"llm_chunk","data":{"content":"h","index":0}}`,
		`{"type":"error","data":{"message":"bad","recoverable":false}}`,
		`{"type":"turn_complete","data":{"response":"done","done":true,"score":[1,{"a":null}]}}`,
		`{"type":"turn_complete","data":{"response":5}}`,
		`{"type":"nope"}`, `{"type":"text_output","data":"x"}`, `{bad`, `plain text`, `   `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		a := New()
		var emitted int
		res, done, err := a.handleLine(line, func(e wire.Event) {
			emitted++
			fuzzcheck.Emitted(t, e)
		})
		switch {
		case err != nil:
			var fl *harness.Failure
			if !errors.As(err, &fl) || fl.Type != wire.FailureProtocol || fl.Message == "" || !done {
				t.Fatalf("a line failed with %v (done %v), not a protocol error ending the turn", err, done)
			}
		case done:
			fuzzcheck.Encodes(t, "turn result extra", res.Extra)
		}
		if emitted > 1 {
			t.Fatalf("one line gave %d events", emitted)
		}
	})
}
