package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/internal/doorcap/doortest"
)

// TestBridgeSessionCapRefusesOnlyWhenAllBusy: with MaxSessions 2 and both
// sessions holding a GET stream, a third initialize (and a GET without a
// session, for which mcp-go would make one) is refused with 503 naming the
// cap in a JSON-RPC error, and a GET naming a made-up session is 404 (mcp-go
// would keep a session under any ID a GET names); once one stream ends,
// the next initialize ends that idle session and is served, the busy one
// is untouched.
func TestBridgeSessionCapRefusesOnlyWhenAllBusy(t *testing.T) {
	echo := NewGoSource("go", GoTool{Tool: Tool{Name: "echo"},
		Handler: func(_ context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(string(args)), nil
		}})
	srv := serve(t, newCatalog(t, CatalogOptions{}, echo), ServerOptions{MaxSessions: 2})
	addr, _, _ := strings.Cut(strings.TrimPrefix(srv.URL(), "http://"), "/")
	initialize := initializeRequest(addr, srv.Token())
	session := func() string {
		c := doortest.Dial(t, addr)
		defer c.Close()
		if _, err := c.Write([]byte(initialize)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize: %v %v", resp, err)
		}
		return resp.Header.Get("Mcp-Session-Id")
	}
	get := func(id string) (net.Conn, int) {
		c := doortest.Dial(t, addr)
		req := "GET " + EndpointPath + " HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + srv.Token() +
			"\r\nAccept: text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\n"
		if id != "" {
			req += "Mcp-Session-Id: " + id + "\r\n"
		}
		if _, err := c.Write([]byte(req + "\r\n")); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c, resp.StatusCode
	}
	a, b := session(), session()
	streamA, st := get(a)
	if st != http.StatusOK {
		t.Fatalf("control: a live session's GET stream answered %d", st)
	}
	if _, st := get(b); st != http.StatusOK {
		t.Fatalf("control: a live session's GET stream answered %d", st)
	}

	ans := doortest.Send(t, addr, initialize, nil)
	if ans.Status != http.StatusServiceUnavailable || ans.Refused != ReasonSessions ||
		!strings.Contains(ans.Body, `"jsonrpc":"2.0"`) || !strings.Contains(ans.Body, "at most 2 MCP sessions") {
		t.Errorf("an initialize with both sessions busy answered %d (%s) %s, want 503 bridge_session_cap in a JSON-RPC error", ans.Status, ans.Refused, ans.Body)
	}
	if _, st := get(""); st != http.StatusServiceUnavailable {
		t.Errorf("a GET without a session, both busy, answered %d, want 503", st)
	}
	if _, st := get("mcp-session-made-up"); st != http.StatusNotFound {
		t.Errorf("a GET naming a made-up session answered %d, want 404", st)
	}

	streamA.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ans := doortest.Send(t, addr, initialize, nil)
		if ans.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("once session A's stream closed, an initialize still answered %d %s", ans.Status, ans.Body)
		}
	}
	if _, st := get(a); st != http.StatusNotFound {
		t.Errorf("the idle session A, ended to make room, answered a GET %d, want 404", st)
	}
	s := srv.SessionStats()
	if s.Live != 2 || s.Evicted != 1 || s.Refused < 2 {
		t.Errorf("session stats %+v, want 2 live, 1 evicted, at least 2 refused", s)
	}
}
