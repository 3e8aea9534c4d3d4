package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// stalledPeer serves one WebSocket on 127.0.0.1 whose client never reads:
// the server's writes block once the sockets' buffers are full. It
// returns the server's side of it, with writes timing out after timeout.
func stalledPeer(t *testing.T, timeout time.Duration) *wsConn {
	t.Helper()
	conns := make(chan *wsConn, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		wc := newWSConn(c, 1<<20, prometheus.NewCounter(prometheus.CounterOpts{Name: "r"}), prometheus.NewCounter(prometheus.CounterOpts{Name: "s"}), timeout)
		conns <- wc
		<-wc.ctx.Done()
	}))
	t.Cleanup(ts.Close)
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	wc := <-conns
	t.Cleanup(wc.cancel)
	return wc
}

// fillUntilError writes 256 KiB frames until one fails, and returns the
// bytes written before it and its error; it fails the test if no write
// fails within limit (the writer is left to the cleanup's close).
func fillUntilError(t *testing.T, wc *wsConn, limit time.Duration) (int, error) {
	t.Helper()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		frame := []byte(`"` + strings.Repeat("x", 256<<10) + `"`)
		n := 0
		for {
			if err := wc.sendRaw(frame); err != nil {
				done <- result{n, err}
				return
			}
			n += len(frame)
		}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-time.After(limit):
		t.Fatalf("no write to a peer that reads nothing failed in %s", limit)
		return 0, nil
	}
}

// A write to a peer that stopped reading ends after the write timeout
// (with an error matching context.DeadlineExceeded) and closes the
// connection; later writes fail at once.
func TestWriteToAStalledPeerTimesOut(t *testing.T) {
	const timeout = 300 * time.Millisecond
	wc := stalledPeer(t, timeout)
	t0 := time.Now()
	n, err := fillUntilError(t, wc, 30*time.Second)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after %d bytes the write failed with %v, want a deadline", n, err)
	}
	if took := time.Since(t0); took < timeout {
		t.Fatalf("the write failed after %s, before the %s timeout", took, timeout)
	}
	t1 := time.Now()
	if err := wc.sendRaw([]byte(`{}`)); err == nil || time.Since(t1) > timeout {
		t.Fatalf("a write after the timeout: %v after %s", err, time.Since(t1))
	}
}

// A write blocked on a stalled peer ends when the connection's context
// does, long before the write timeout; a read waiting for a frame too.
func TestBlockedWriteAndReadEndWithTheConnection(t *testing.T) {
	wc := stalledPeer(t, time.Hour)
	readErr := make(chan error, 1)
	go func() {
		_, err := wc.readOne()
		readErr <- err
	}()
	time.AfterFunc(500*time.Millisecond, wc.cancel)
	n, err := fillUntilError(t, wc, 30*time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("after %d bytes the write failed with %v, want the context's end", n, err)
	}
	select {
	case err := <-readErr:
		if !errors.Is(err, context.Canceled) || wc.goneReason() != "connection closed" {
			t.Fatalf("the read ended with %v (%s), want the context's end", err, wc.goneReason())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read still waits 10 s after the connection's context ended")
	}
}
