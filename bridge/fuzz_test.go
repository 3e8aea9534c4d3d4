package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// bridgeSeeds are MCP requests a harness sends the bridge.
var bridgeSeeds = []string{
	initializeBody,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":[1],"_meta":{"progressToken":"p"}}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"missing"}}`,
	`{"jsonrpc":"2.0","id":5,"method":"ping"}`,
	`[{"jsonrpc":"2.0","id":6,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}]`,
	`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":null}`,
	`{"jsonrpc":"1.0"}`, `[]`, `{`, ``,
}

// FuzzRequest posts a request body to the bridge's MCP endpoint, with its
// bearer token and an initialized session, as a harness does: every
// request gets a client error or a response of JSON-RPC messages (plain
// JSON or server-sent events), never a server error, and every tool call
// that started is reported finished.
func FuzzRequest(f *testing.F) {
	for _, s := range bridgeSeeds {
		f.Add([]byte(s))
	}
	echo := NewGoSource("go", GoTool{Tool: Tool{Name: "echo"},
		Handler: func(_ context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(string(args)), nil
		}})
	var calls, results atomic.Int64
	srv := serve(f, newCatalog(f, CatalogOptions{}, echo), ServerOptions{
		OnCall:   func(CallStart) { calls.Add(1) },
		OnResult: func(CallEnd) { results.Add(1) },
	})
	h := srv.handler
	post := func(sid string, body []byte) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, EndpointPath, bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+srv.Token())
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	init := post("", []byte(initializeBody))
	sid := init.Header().Get("Mcp-Session-Id")
	if init.Code != http.StatusOK || sid == "" {
		f.Fatalf("initialize: %d %q: %s", init.Code, sid, init.Body)
	}
	post(sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))

	f.Fuzz(func(t *testing.T, body []byte) {
		w := post(sid, body)
		if w.Code >= 500 {
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
		if calls.Load() != results.Load() {
			t.Fatalf("%d tool calls started, %d reported finished", calls.Load(), results.Load())
		}
		if w.Code != http.StatusOK {
			return
		}
		ct := w.Header().Get("Content-Type")
		switch {
		case strings.HasPrefix(ct, "application/json"):
			checkMessages(t, w.Body.Bytes())
		case strings.HasPrefix(ct, "text/event-stream"):
			sc := bufio.NewScanner(w.Body)
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
					checkMessages(t, []byte(strings.TrimSpace(data)))
				}
			}
		default:
			t.Fatalf("a 200 response of type %q: %s", ct, w.Body)
		}
	})
}

// checkMessages fails t unless b is one JSON-RPC 2.0 message or a batch.
func checkMessages(t *testing.T, b []byte) {
	t.Helper()
	var batch []map[string]json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		if err := json.Unmarshal(b, &batch); err != nil {
			t.Fatalf("a response batch that does not decode: %v: %s", err, b)
		}
	} else {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("a response that does not decode: %v: %s", err, b)
		}
		batch = append(batch, m)
	}
	for _, m := range batch {
		if string(m["jsonrpc"]) != `"2.0"` {
			t.Fatalf("not a JSON-RPC 2.0 message: %s", b)
		}
	}
}
