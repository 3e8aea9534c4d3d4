package streamjson

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/fuzzcheck"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// streamSeeds are stream-json lines of one turn (split at newlines) as
// Claude Code and Qwen Code print them.
var streamSeeds = []string{
	`{"type":"system","subtype":"init","session_id":"s1","model":"m","tools":["Bash"],"permissionMode":"bypassPermissions","mcp_servers":[{"name":"env","status":"failed"}]}`,
	`{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"thinking","thinking":"hm"},{"type":"tool_use","id":"tu1","name":"mcp__env__add","input":{"a":1}}]},"parent_tool_use_id":null}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu1","content":[{"type":"text","text":"2"}],"is_error":true}]}}`,
	`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"h"}}}`,
	`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"t"}}}`,
	`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}`,
	`{"type":"control_response","response":{"subtype":"error","request_id":"x","error":"no"}}`,
	`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1","usage":{"input_tokens":3},"total_cost_usd":0.1}`,
	`{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500 boom","api_error_status":500}`,
	`{"type":"result","subtype":"error_during_execution","errors":["a",{"b":1}]}`,
	`{"type":"assistant","message":{"content":"plain"},"error":"rate_limit"}`,
	`{"type":"assistant","message":{"content":5}}`,
	`{"type":"keep_alive"}` + "\nplain text\n{\"subtype\":\"x\"}\n{bad",
}

// exited returns a process that has exited, for the mapper's answers and
// exit checks: writes to it fail, as to an agent that went away.
func exited(f *testing.F) *process.Process {
	sup, err := process.NewSupervisor(process.Options{})
	if err != nil {
		f.Fatal(err)
	}
	p, err := sup.Start(process.Spec{Name: "exited", Path: "true"})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Wait(ctx); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { sup.Close(context.Background(), 0) })
	return p
}

// FuzzStreamJSON maps one turn's stream-json output as Turn does: each
// line gives well-formed events, the turn's end with a result whose extra
// encodes, or a failure of a turn's kind.
func FuzzStreamJSON(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(streamSeeds[3]), true)
	p := exited(f)
	log := adapterkit.NewLogLimit(slog.New(slog.DiscardHandler))
	f.Fuzz(func(t *testing.T, out []byte, partial bool) {
		a := &Adapter{log: log}
		m := &mapper{a: a, p: p, ctx: context.Background(), emit: func(e wire.Event) { fuzzcheck.Emitted(t, e) },
			server: "env", names: map[string]string{}, extra: map[string]any{}, partial: partial}
		for line := range bytes.SplitSeq(out, []byte("\n")) {
			res, done, err := m.handle(line, false)
			if err != nil {
				var fl *harness.Failure
				if !errors.As(err, &fl) || fl.Message == "" || !done ||
					(fl.Type != wire.FailureProtocol && fl.Type != wire.FailureHarnessCrashed) {
					t.Fatalf("a line failed with %v (done %v)", err, done)
				}
				return
			}
			if done {
				fuzzcheck.Encodes(t, "turn result extra", res.Extra)
				return
			}
		}
	})
}
