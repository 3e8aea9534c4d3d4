package server

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fuzzcheck"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/server/trainer"
	"github.com/harnessd/harnessd/wire"
)

// frameSeeds are client frames of /ws, bodies of /reset and /step, and
// frames of /harness, good and bad, as the tests and clients send them.
var frameSeeds = []string{
	`{"type":"reset"}`,
	`{"type":"reset","data":{"seed":7,"episode_id":"ep-1","task_id":"t1"}}`,
	`{"type":"reset","data":{"seed":-1}}`,
	`{"type":"reset","data":{"sampling":{"temperature":1,"top_p":0.9,"allow":["logit_bias"],"strip_stop":true},"policy_version":3}}`,
	`{"type":"reset","data":{"sampling":{"top_p":7,"bogus":1},"policy_version":-2}}`,
	`{"type":"policy_version","data":{"version":4,"scope":"daemon"}}`,
	`{"type":"export","data":{"episode_id":"ep-1"}}`,
	`{"type":"fork","data":{"count":4,"at_turn":2,"mechanism":"replay"}}`,
	`{"type":"fork","data":{"count":"4","at_turn":-1,"mechanism":"criu","x":1}}`,
	`{"count":8,"session_id":"s1"}`,
	`{"type":"step","data":{"message":"fix the bug"}}`,
	`{"type":"step","data":{"message":"hi","metadata":{"k":1}}}`,
	`{"type":"step","data":{"message":null,"extra":1}}`,
	`{"type":"state"}`,
	`{"type":"close"}`,
	`{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`,
	`{"type":"message","content":"hello"}`,
	`{"type":"cancel"}`,
	`{"action":{"message":"hi"},"timeout_s":2.5,"request_id":"r1","session_id":"s1"}`,
	`{"action":{"message":"hi"},"timeout_s":-1}`,
	`{"action":{"message":"hi"},"timeout_s":1e300}`,
	`{"seed":3,"episode_id":"e","session_id":"abc"}`,
	`[1,2]`, `"str"`, `null`, `{`, ``, `{"type":5}`,
}

// checkWireError fails t unless e is an error a client can be answered
// with: a known code, a message, and a frame that encodes.
func checkWireError(t *testing.T, e *wireError) {
	t.Helper()
	switch e.Code {
	case codeInvalidJSON, codeUnknownType, codeValidation:
	default:
		t.Fatalf("a decode error with code %q: %v", e.Code, e)
	}
	if e.Message == "" {
		t.Fatalf("a decode error without a message: %#v", e)
	}
	fuzzcheck.Encodes(t, "error frame", e.frame(frameTypeError))
}

// checkAction fails t unless a survives a round trip through its wire form.
func checkAction(t *testing.T, a wire.Action) {
	t.Helper()
	b := fuzzcheck.Encodes(t, "action", map[string]any{"message": a.Message, "metadata": a.Metadata})
	back, werr := parseAction(b)
	if werr != nil {
		t.Fatalf("an accepted action does not parse again: %v: %s", werr, b)
	}
	if back.Message != a.Message {
		t.Fatalf("action message changed in a round trip: %q -> %q", a.Message, back.Message)
	}
}

// FuzzWSFrame decodes a /ws client frame and its data as the connection
// does: every frame is answered with an error or decodes to a request of
// a known type whose data is validated.
func FuzzWSFrame(f *testing.F) {
	for _, s := range frameSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, werr := parseWSFrame(b)
		if werr != nil {
			checkWireError(t, werr)
			return
		}
		switch fr.Type {
		case frameTypeReset:
			if _, werr := parseReset(fr.Data); werr != nil {
				checkWireError(t, werr)
			}
		case frameTypeStep:
			a, werr := parseAction(fr.Data)
			if werr != nil {
				checkWireError(t, werr)
				return
			}
			checkAction(t, a)
		case trainer.FrameType:
			checkPolicyFrame(t, fr.Data)
		case wire.FrameFork:
			checkForkRequest(t, fr.Data, false)
		case frameTypeState, frameTypeClose, frameTypeMCP, frameTypeExport:
		default:
			t.Fatalf("accepted a frame of type %q", fr.Type)
		}
	})
}

// FuzzHarnessFrame decodes a /harness client frame: a message with its
// content, a cancel, or an error.
func FuzzHarnessFrame(f *testing.F) {
	for _, s := range frameSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msg, werr := parseHarnessFrame(inbound{data: b})
		if werr != nil {
			checkWireError(t, werr)
			return
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("accepted a frame that is not a JSON object: %q", b)
		}
		switch {
		case msg == nil && v["type"] != frameTypeCancel:
			t.Fatalf("a cancel from a frame of type %v", v["type"])
		case msg != nil && (v["type"] != frameTypeMessage || v["content"] != *msg):
			t.Fatalf("message %q from %q", *msg, b)
		}
	})
}

// FuzzHTTPBody decodes POST /reset and POST /step bodies: an error for
// the client (422), or options and an action that hold what the body says.
func FuzzHTTPBody(f *testing.F) {
	for _, s := range frameSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, werr := parseResetBody(b); werr != nil {
			checkWireError(t, werr)
		}
		checkForkRequest(t, b, true)
		a, _, werr := parseStepBody(b)
		if werr != nil {
			checkWireError(t, werr)
			return
		}
		checkAction(t, a)
		var extra struct {
			TimeoutS *float64 `json:"timeout_s"`
		}
		json.Unmarshal(b, &extra)
		if extra.TimeoutS != nil && a.Timeout <= 0 {
			t.Fatalf("timeout_s %v accepted as a turn timeout of %v", *extra.TimeoutS, a.Timeout)
		}
	})
}

// FuzzMCPRequest serves a JSON-RPC request of /mcp (and of /ws mcp
// frames) by a real server whose environment has no tool servers: every
// request gets one JSON-RPC 2.0 response with a result or an error.
func FuzzMCPRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"add","arguments":{"a":1}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","session_id":"nope"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"openenv/session/create"}`,
		`{"jsonrpc":"2.0","id":4,"method":"openenv/session/close","params":{"session_id":"x"}}`,
		`{"jsonrpc":"1.0","id":1.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":[1],"method":"x","params":[1]}`,
		`[]`, `null`, `{"jsonrpc":"2.0","method":"tools/list","extra":1}`,
	} {
		f.Add([]byte(s))
	}
	bin := testbin.Path(f, "testharness")
	ts := start(f, Options{MaxSessions: 4, Config: &config.Config{
		Name:      "fuzz-env",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{bin, "agent"}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Workspace: config.WorkspaceConfig{Root: f.TempDir()},
	}})
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp := ts.mcpRequest(ctx, b, nil)
		out := fuzzcheck.Encodes(t, "JSON-RPC response", resp)
		var r struct {
			JSONRPC string           `json:"jsonrpc"`
			Result  *json.RawMessage `json:"result"`
			Error   *rpcError        `json:"error"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		var keys map[string]json.RawMessage
		json.Unmarshal(out, &keys)
		if _, hasID := keys["id"]; r.JSONRPC != "2.0" || !hasID {
			t.Fatalf("not a JSON-RPC 2.0 response: %s", out)
		}
		if (r.Result == nil) == (r.Error == nil) {
			t.Fatalf("a response needs exactly one of result and error: %s", out)
		}
		if r.Error != nil && (r.Error.Code == 0 || r.Error.Message == "") {
			t.Fatalf("an error without code or message: %s", out)
		}
		var req map[string]json.RawMessage
		if json.Unmarshal(b, &req) == nil && r.Error == nil {
			var want, got any
			json.Unmarshal(req["id"], &want)
			json.Unmarshal(keys["id"], &got)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("response id %s for request id %s", keys["id"], req["id"])
			}
		}
		// A session a request created is closed again, so the capacity
		// does not run out during a run.
		if res, ok := resp["result"].(map[string]any); ok {
			if id, ok := res["session_id"].(string); ok && res["closed"] == nil {
				ts.mcpRequest(ctx, []byte(`{"jsonrpc":"2.0","id":0,"method":"openenv/session/close","params":{"session_id":"`+id+`"}}`), nil)
			}
		}
	})
}

// checkPolicyFrame checks a policy_version frame's data as the frame's
// answer would: valid, or refused with errors naming a field.
func checkPolicyFrame(t *testing.T, data json.RawMessage) {
	t.Helper()
	for _, e := range trainer.CheckFrame(data) {
		if e.Type == "" || len(e.Loc) == 0 || e.Msg == "" {
			t.Fatalf("policy_version %s: an error without type, field or message: %+v", data, e)
		}
	}
}

// checkForkRequest checks a fork's data as the frame (or POST /fork, with
// http) answers it: refused with errors naming a field, or a request
// within the bounds.
func checkForkRequest(t *testing.T, data json.RawMessage, http bool) {
	t.Helper()
	r, werr := parseFork(data, http)
	if werr != nil {
		checkWireError(t, werr)
		for _, e := range werr.Errors {
			// A body that is not an object is refused as a whole (loc []).
			if e.Type == "" || e.Msg == "" || (len(e.Loc) == 0 && e.Type != "model_type") {
				t.Fatalf("fork %s: an error without type, field or message: %+v", data, e)
			}
		}
		return
	}
	if r.count < 1 || r.count > wire.MaxForkCount || r.atTurn < 0 || (r.mechanism != "" && !knownMechanism(r.mechanism)) || (!http && r.sessionID != "") {
		t.Fatalf("fork %s accepted out of bounds: %+v", data, r)
	}
}
