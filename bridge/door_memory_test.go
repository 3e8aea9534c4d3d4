package bridge

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/doorcap/doortest"
	"github.com/harnessd/harnessd/internal/testbin"
)

// TestBridgeBoundsBodiesInFlight: the bridge bounds each POST body
// (MaxBodyBytes, 8 MiB by default), the door's connections (256), and the
// bytes of all the door's bodies in flight together (its body budget,
// twice MaxBodyBytes: 16 MiB). An agent with its token sends on 16
// connections at once all but the last byte of a body just under the cap
// and stops: without the budget the bridge's guard held every body (124
// MiB here; 2 GiB at the door's 256 connections). With it, two fit and
// the other 14 are refused at once with 503 naming the budget; the heap
// grows by at most 64 MiB.
//
// The positive controls: one whole body of that size is read and
// answered (400 from the MCP server: not JSON-RPC; not 413 or 503),
// before the stall and again once the stalled connections close.
func TestBridgeBoundsBodiesInFlight(t *testing.T) {
	const (
		conns    = 16
		bodySize = DefaultMaxBodyBytes - 1
		budget   = 2 * DefaultMaxBodyBytes
		bound    = 64 << 20
	)
	srv, addr := doorServer(t, doorcap.Bounds{})
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", EndpointPath, addr, srv.Token(), bodySize)
	body := bytes.Repeat([]byte("x"), bodySize)

	if a := doortest.Send(t, addr, head, body); a.Status != http.StatusBadRequest {
		t.Fatalf("control: a whole %d-byte body answered %d %s, want 400 (read, not JSON-RPC)", bodySize, a.Status, a.Body)
	}

	before := testbin.HeapInUse()
	stalled := doortest.StallBodies(t, addr, head, body, conns)
	var grew uint64
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && grew <= bound; {
		if h := testbin.HeapInUse(); h > before {
			grew = max(grew, h-before)
		}
		time.Sleep(50 * time.Millisecond) // paces the collections; nothing waits on it
	}
	t.Logf("heap in use grew by %d MiB with %d stalled %d MiB bodies", grew>>20, conns, bodySize>>20)
	if grew > bound {
		t.Errorf("the bridge holds %d MiB for %d stalled request bodies of %d MiB each; want at most %d MiB (its %d MiB body budget and slack)",
			grew>>20, conns, DefaultMaxBodyBytes>>20, bound>>20, budget>>20)
	}

	want := conns - budget/bodySize
	refused := 0
	for _, a := range stalled.Answers(want, 20*time.Second) {
		if a.Status == http.StatusServiceUnavailable && a.Refused == doorcap.ReasonBodies && strings.Contains(a.Body, "budget of 16 MiB") {
			refused++
		} else {
			t.Errorf("a stalled body answered %d (%s) %s, want 503 door_body_budget naming 16 MiB", a.Status, a.Refused, a.Body)
		}
	}
	if refused != want {
		t.Errorf("%d of %d stalled bodies refused with the budget's 503, want %d (two fit)", refused, conns, want)
	}

	stalled.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a := doortest.Send(t, addr, head, body)
		if a.Status == http.StatusBadRequest {
			break
		}
		if a.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("control: once the stalled bodies' connections closed, a whole body answered %d %s, want 400", a.Status, a.Body)
		}
	}
}

// TestBridgeBoundsMCPSessions: the bridge serves MCP statefully with an
// in-memory event store, and kept every session an initialize made until
// the episode ended (20,000 held 212 MiB, 11 KiB each). It keeps at most
// DefaultMaxSessions: an agent with its token sends 20,000 initializes on
// one keep-alive connection (no DELETE), each answered 200 with a session
// (the control: an agent that initializes anew on every run keeps
// working), and the bridge's heap grows by at most 16 MiB; the first
// session, least recently used, has been ended (404), the last is live.
func TestBridgeBoundsMCPSessions(t *testing.T) {
	const (
		n     = 20000
		bound = 16 << 20
	)
	srv, addr := doorServer(t, doorcap.Bounds{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	req := []byte(initializeRequest(addr, srv.Token()))
	before := testbin.HeapInUse()
	ok := 0
	var first, last string
	for range n {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); resp.StatusCode == http.StatusOK && id != "" {
			ok++
			if first == "" {
				first = id
			}
			last = id
		}
	}
	grew := int64(testbin.HeapInUse()) - int64(before)
	t.Logf("%d initializes answered 200 with a session; heap in use grew by %d MiB (%d bytes a session)", ok, grew>>20, grew/int64(max(ok, 1)))
	if ok != n {
		t.Fatalf("control: only %d of %d initializes made a session", ok, n)
	}
	if grew > bound {
		t.Errorf("%d MCP sessions made by one agent hold %d MiB of the bridge's memory until the episode ends; want at most %d MiB", ok, grew>>20, bound>>20)
	}
	list := func(id string) int {
		req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s",
			EndpointPath, addr, srv.Token(), id, len(listBody), listBody)
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := list(last); st != http.StatusOK {
		t.Errorf("control: the last session's tools/list answered %d, want 200", st)
	}
	if st := list(first); st != http.StatusNotFound {
		t.Errorf("the first of %d sessions answered %d, want 404 (ended to make room)", ok, st)
	}
}

// listBody is a tools/list request.
const listBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
