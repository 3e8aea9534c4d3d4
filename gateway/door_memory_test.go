package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/doorcap/doortest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/testharness/fakellm"
)

// TestGatewayBoundsBodiesInFlight: the gateway bounds each request body
// (MaxRequestBody, 32 MiB by default), each door's connections (256), and
// the bytes of all the door's bodies in flight together (its body budget,
// twice MaxRequestBody: 64 MiB). An agent with its own key sends on 8
// connections at once all but the last byte of a 24 MiB body and stops:
// without the budget the gateway held every body (255 MiB here; 8 GiB at
// the door's 256 connections, from one episode, outside the harness's
// memory limit). With it, two bodies fit and the other six are refused at
// once with 503 in the dialect's shape naming the budget; the heap grows
// by at most the budget and 32 MiB of slack.
//
// The positive controls: one body of that size, sent whole, is read in
// full and answered (400: not JSON, not 413 or 503), before the stall and
// again once the stalled connections close (their bytes are back).
func TestGatewayBoundsBodiesInFlight(t *testing.T) {
	const (
		conns    = 8
		bodySize = 24 << 20
		budget   = 2 * defaultMaxRequestBody
		bound    = budget + 32<<20
	)
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	addr := strings.TrimPrefix(gw.base, "http://")
	head := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", gw.Key(), bodySize)
	whole := bytes.Repeat([]byte("x"), bodySize)

	if a := doortest.Send(t, addr, head, whole); a.Status != http.StatusBadRequest {
		t.Fatalf("control: a whole %d MiB body answered %d %s, want 400 (read in full, not JSON)", bodySize>>20, a.Status, a.Body)
	}

	before := testbin.HeapInUse()
	stalled := doortest.StallBodies(t, addr, head, whole, conns)
	var grew uint64
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && grew <= bound; {
		if h := testbin.HeapInUse(); h > before {
			grew = max(grew, h-before)
		}
		time.Sleep(50 * time.Millisecond) // paces the collections; nothing waits on it
	}
	t.Logf("heap in use grew by %d MiB with %d stalled %d MiB bodies", grew>>20, conns, bodySize>>20)
	if grew > bound {
		t.Errorf("the gateway holds %d MiB for %d stalled request bodies of %d MiB each; want at most %d MiB (its %d MiB body budget and slack), the rest refused",
			grew>>20, conns, bodySize>>20, bound>>20, budget>>20)
	}

	want := conns - budget/bodySize
	refused := 0
	for _, a := range stalled.Answers(want, 20*time.Second) {
		if a.Status == http.StatusServiceUnavailable && a.Refused == doorcap.ReasonBodies &&
			strings.Contains(a.Body, "budget of 64 MiB") && strings.Contains(a.Body, `"type":"server_error"`) {
			refused++
		} else {
			t.Errorf("a stalled body answered %d (%s) %s, want 503 door_body_budget naming 64 MiB in OpenAI's shape", a.Status, a.Refused, a.Body)
		}
	}
	if refused != want {
		t.Errorf("%d of %d stalled bodies refused with the budget's 503, want %d (two fit)", refused, conns, want)
	}

	stalled.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a := doortest.Send(t, addr, head, whole)
		if a.Status == http.StatusBadRequest {
			break
		}
		if a.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("control: once the stalled bodies' connections closed, a whole body answered %d %s, want 400", a.Status, a.Body)
		}
	}
}

// TestGatewayBoundsHeader: the gateway's door server bounds a request
// header at httpgroup.MaxHeaderBytes (64 KiB; it was Go's default, 1 MiB,
// which each of the door's 256 connections could make the daemon hold
// before any key is checked, for up to the 10 s header timeout). The test
// sends a keyed model listing with a 512 KiB header and wants 431; the
// control, the same request with a 4 KiB header, is answered 200.
func TestGatewayBoundsHeader(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	addr := strings.TrimPrefix(gw.base, "http://")
	do := func(pad int) int {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var b strings.Builder
		fmt.Fprintf(&b, "GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\n", gw.Key())
		for i := 0; i < pad/1024; i++ {
			fmt.Fprintf(&b, "X-Pad-%d: %s\r\n", i, strings.Repeat("p", 1000))
		}
		b.WriteString("\r\n")
		go c.Write([]byte(b.String()))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("a %d KiB header: %v", pad>>10, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := do(4 << 10); st != http.StatusOK {
		t.Fatalf("control: a 4 KiB header answered %d, want 200", st)
	}
	if st := do(512 << 10); st != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 512 KiB header answered %d, want 431 (a bound like the bridge's 64 KiB)", st)
	}
}
