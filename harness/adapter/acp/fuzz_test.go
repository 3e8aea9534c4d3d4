package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/fuzzcheck"
	"github.com/harnessd/harnessd/wire"
)

// acpSeeds are agent stdout lines of one turn (split at newlines).
var acpSeeds = []string{
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"},"_meta":{"usage":{"in":1}}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read file","status":"pending"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","rawInput":{"path":"a.txt"},"status":"in_progress"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","rawOutput":{"bytes":3}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t2","title":"Run","name":"bash","status":"failed","content":[{"type":"content","content":{"type":"text","text":"exit 1"}}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"plan","entries":[{"content":"a"}]}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"usage_update","used":100,"size":1000}}}`,
	`{"jsonrpc":"2.0","id":"perm_1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"p1","title":"rm -rf"},"options":[{"optionId":"allow","kind":"allow_once"},{"optionId":"reject","kind":"reject_once"}]}}`,
	`{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{}}`,
	`{"jsonrpc":"2.0","id":999,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn","usage":{"total":3},"_meta":{"x":1}}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom","data":{"a":1}}}`,
	`{"jsonrpc":"2.0","id":1,"result":"not an object"}`,
	"garbage\nmalformed {\n{\"jsonrpc\":\"2.0\"}",
}

// FuzzMessage feeds a turn's agent output to the JSON-RPC connection as
// the turn's wait does (the connection is closed, so answers are computed
// but not written): notifications give well-formed events, requests are
// answered with a result that encodes or an error, and the response to the
// prompt gives a turn result that encodes.
func FuzzMessage(f *testing.F) {
	for _, s := range acpSeeds {
		f.Add([]byte(s))
	}
	log := adapterkit.NewLogLimit(slog.New(slog.DiscardHandler))
	opts, err := ParseOptions(map[string]any{"deny_patterns": []any{"^rm "}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		a := &Adapter{log: log, calls: map[string]*toolCall{}, opts: opts}
		ts := newTurnState(func(e wire.Event) { fuzzcheck.Emitted(t, e) }, log, "s1", a.calls)
		a.cur = ts
		c := newConn(nil, log, 0, a.serve)
		c.close()
		for line := range bytes.SplitSeq(out, []byte("\n")) {
			if m, ok := c.decode(line); ok && m.Method != "" && hasID(m.ID) {
				result, rerr := a.serve(m.Method, m.Params)
				if rerr == nil {
					if _, err := encodeParams(result); err != nil {
						t.Fatalf("the answer to %s does not encode: %v", m.Method, err)
					}
				} else if rerr.Message == "" {
					t.Fatalf("an error answer to %s without a message", m.Method)
				}
			}
			raw, done, err := c.dispatch(context.Background(), line, 1, watch{notify: ts.notify})
			if !done {
				continue
			}
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an error response without a message")
				}
				return
			}
			var pr promptResult
			if decodeResult(raw, &pr) != nil {
				return
			}
			res := ts.result(pr)
			fuzzcheck.Encodes(t, "turn result extra", res.Extra)
			return
		}
		b, _ := json.Marshal(ts.result(promptResult{}).Extra)
		fuzzcheck.JSON(t, "turn result extra", b)
	})
}
