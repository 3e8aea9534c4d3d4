package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/doorcap/doortest"
)

// doorServer serves a one-tool catalog with door bounds b.
func doorServer(t *testing.T, b doorcap.Bounds) (*Server, string) {
	t.Helper()
	echo := NewGoSource("go", GoTool{Tool: Tool{Name: "echo"},
		Handler: func(_ context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(string(args)), nil
		}})
	srv := serve(t, newCatalog(t, CatalogOptions{}, echo), ServerOptions{Door: b})
	addr := strings.TrimPrefix(srv.URL(), "http://")
	addr, _, _ = strings.Cut(addr, "/")
	return srv, addr
}

// initializeRequest is a raw keep-alive MCP initialize to addr with token.
func initializeRequest(addr, token string) string {
	return "POST " + EndpointPath + " HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + token +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " +
		strconv.Itoa(len(initializeBody)) + "\r\n\r\n" + initializeBody
}

// TestDoorBounds: the bridge holds at most Door.MaxConns keep-alive
// connections (each has initialized an MCP session), refuses more, closes
// idle ones after the idle timeout, and serves again once they are gone.
func TestDoorBounds(t *testing.T) {
	srv, addr := doorServer(t, doorcap.Bounds{MaxConns: 4, IdleTimeout: 300 * time.Millisecond})
	doortest.CheckBounds(t, addr, 4, initializeRequest(addr, srv.Token()), http.StatusOK)
	if s := srv.DoorStats(); s.RefusedCap != 8 || s.RefusedReserve != 0 {
		t.Errorf("door stats %+v, want 8 refused at the cap", s)
	}
}

// TestDoorKeylessCloses: an answer to a request without the token closes
// its connection; a keyed one keeps it (the positive control).
func TestDoorKeylessCloses(t *testing.T) {
	srv, addr := doorServer(t, doorcap.Bounds{})
	c := doortest.Dial(t, addr)
	st, _, closing, err := c.Do(initializeRequest(addr, "wrong"))
	if err != nil || st != http.StatusUnauthorized || !closing {
		t.Fatalf("wrong token: status %d close %v err %v, want 401 with Connection: close", st, closing, err)
	}
	c.WaitClosed(t)
	c = doortest.Dial(t, addr)
	for range 2 {
		if st, _, closing, err := c.Do(initializeRequest(addr, srv.Token())); err != nil || st != http.StatusOK || closing {
			t.Fatalf("keyed initialize: status %d close %v err %v, want 200 kept alive", st, closing, err)
		}
	}
}

// TestDoorHeaderTimeout: a connection that sends nothing is closed after
// the header timeout.
func TestDoorHeaderTimeout(t *testing.T) {
	_, addr := doorServer(t, doorcap.Bounds{ReadHeaderTimeout: 200 * time.Millisecond})
	doortest.Dial(t, addr).WaitClosed(t)
}
