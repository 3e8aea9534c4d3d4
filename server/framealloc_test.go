package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// A step frame's metadata, the client's own, is read for the keys the
// daemon uses (submit, play) and otherwise only validated: decoded into Go
// values, 8 MiB of zeros under a key allocated 25× the frame (a 64 MiB
// frame, the default limit, about 1.6 GB per request), and a frame that is
// an array of zeros was decoded the same way to be echoed in its error. The
// bound here is 4× the frame (its copies as raw JSON); the control is that
// the keys the daemon uses are still read, and the errors still say what
// is wrong.
func TestFrameParsingAllocatesInProportionToTheFrame(t *testing.T) {
	const size = 8 << 20
	step := append(append([]byte(`{"type":"step","data":{"message":"hi","metadata":{"submit":true,"pad":`), testbin.JSONZeros(size)...), "}}}"...)
	var md map[string]any
	got := testbin.Allocated(func() {
		f, werr := parseWSFrame(step)
		if werr != nil {
			t.Fatalf("frame: %+v", werr)
		}
		a, werr := parseAction(f.Data)
		if werr != nil {
			t.Fatalf("action: %+v", werr)
		}
		md = a.Metadata
	})
	t.Logf("a step with %d MiB of metadata allocated %d MiB", size>>20, got>>20)
	if got > 4*size {
		t.Errorf("a step with %d MiB of metadata allocated %d MiB (over 4× the frame)", size>>20, got>>20)
	}
	if md["submit"] != true {
		t.Errorf("the metadata's submit key was not read: %v", md)
	}

	array := []byte(testbin.JSONZeros(size))
	var code string
	got = testbin.Allocated(func() {
		_, werr := parseWSFrame(array)
		if werr != nil {
			code = werr.Code
		}
	})
	t.Logf("a frame of %d MiB that is an array allocated %d MiB (%s)", size>>20, got>>20, code)
	if got > 4*size {
		t.Errorf("a %d MiB frame that is an array allocated %d MiB to be refused", size>>20, got>>20)
	}
	if code != codeValidation {
		t.Errorf("a frame that is an array: code %q, want %q", code, codeValidation)
	}
	if _, werr := parseWSFrame([]byte(`[0,`)); werr == nil || werr.Code != codeInvalidJSON {
		t.Errorf("a frame that is not JSON: %+v, want %s", werr, codeInvalidJSON)
	}
	if _, werr := parseAction([]byte(`{"message":"hi","metadata":[1]}`)); werr == nil || werr.Errors[0].Type != "dict_type" {
		t.Errorf("metadata that is not an object: %+v, want dict_type", werr)
	}
}

// The same for the other two doors that took a client's JSON whole: a
// /harness frame and an MCP request (whose tool arguments stay raw JSON).
func TestHarnessAndMCPParsingAllocateInProportionToTheFrame(t *testing.T) {
	const size = 8 << 20
	frame := append(append([]byte(`{"type":"message","content":"hi","pad":`), testbin.JSONZeros(size)...), '}')
	var content *string
	got := testbin.Allocated(func() { content, _ = parseHarnessFrame(inbound{data: frame}) })
	t.Logf("a /harness frame with %d MiB of padding allocated %d MiB", size>>20, got>>20)
	if got > 4*size {
		t.Errorf("a /harness frame with %d MiB of padding allocated %d MiB (over 4× the frame)", size>>20, got>>20)
	}
	if content == nil || *content != "hi" {
		t.Errorf("the /harness frame's content was not read: %v", content)
	}
	if _, werr := parseHarnessFrame(inbound{data: []byte(testbin.JSONZeros(size))}); werr == nil || werr.Code != codeValidation {
		t.Errorf("a /harness frame that is an array: %+v, want %s", werr, codeValidation)
	}

	s := &Server{}
	req := append(append([]byte(`{"jsonrpc":"2.0","id":7,"method":"nope","params":{"arguments":`), testbin.JSONZeros(size)...), "}}"...)
	var resp map[string]any
	got = testbin.Allocated(func() { resp = s.mcpRequest(context.Background(), req, nil) })
	t.Logf("an MCP request with %d MiB of arguments allocated %d MiB: %v", size>>20, got>>20, resp["error"])
	if got > 4*size {
		t.Errorf("an MCP request with %d MiB of arguments allocated %d MiB (over 4× the request)", size>>20, got>>20)
	}
	if e, _ := resp["error"].(*rpcError); e == nil || e.Code != rpcMethodNotFound || string(resp["id"].(json.RawMessage)) != "7" {
		t.Errorf("an MCP request for an unknown method: %v, want method not found with id 7", resp)
	}
	for body, want := range map[string]int{
		`[1]`: rpcInvalidRequest, `{"jsonrpc":"2.0","id":[1],"method":"x"}`: rpcInvalidRequest,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"}`: rpcInvalidRequest, `{"jsonrpc":"1.0","id":1,"method":"x"}`: rpcInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"method":3}`: rpcInvalidRequest, `{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`: rpcInvalidParams,
		`{"jsonrpc":`: rpcParseError,
	} {
		if e, _ := s.mcpRequest(context.Background(), []byte(body), nil)["error"].(*rpcError); e == nil || e.Code != want {
			t.Errorf("MCP request %s: %+v, want code %d", body, e, want)
		}
	}
}
