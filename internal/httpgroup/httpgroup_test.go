package httpgroup

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/doorcap"
)

// get sends a keep-alive GET on a fresh connection to addr and returns the
// connection and the answer's status (0 when the connection ended first).
func get(t *testing.T, addr string) (net.Conn, int) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return c, 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, 0
	}
	resp.Body.Close()
	return c, resp.StatusCode
}

// TestLimitSpansListeners: a group's cap counts the connections of all its
// listeners together; Shutdown closes them and refuses later Serves.
func TestLimitSpansListeners(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	g := &Group{Limit: doorcap.NewLimit(doorcap.Bounds{MaxConns: 2}, "test", log)}
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		if err := g.Serve(NewServer(h, doorcap.Bounds{}, log), ln, log, "test"); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range addrs {
		if _, st := get(t, a); st != http.StatusOK {
			t.Fatalf("below the cap on %s: status %d", a, st)
		}
	}
	for _, a := range addrs {
		if _, st := get(t, a); st == http.StatusOK {
			t.Fatalf("a third connection (on %s) was served: the cap is not shared", a)
		}
	}
	if s := g.Limit.Stats(); s.Open != 2 || s.RefusedCap != 2 {
		t.Fatalf("stats %+v, want 2 open and 2 refused", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if s := g.Limit.Stats(); s.Open != 0 {
		t.Fatalf("open %d after Shutdown", s.Open)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Serve(NewServer(h, doorcap.Bounds{}, log), ln, log, "test"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve after Shutdown: %v, want ErrClosed", err)
	}
}
