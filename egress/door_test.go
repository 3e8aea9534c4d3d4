package egress

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/doorcap/doortest"
)

// TestDoorBounds: the proxy holds at most MaxClientConnections keep-alive
// client connections (each has forwarded a plain-HTTP request to an
// allowed upstream), refuses more at accept, closes idle ones after the
// idle timeout, and serves again once they are gone.
func TestDoorBounds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "up") })}
	done := make(chan struct{})
	go func() { defer close(done); up.Serve(ln) }()
	t.Cleanup(func() { up.Close(); <-done })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	tp := startProxy(t, Options{
		Policy:               Policy{Allow: []string{"allowed.test:" + port}},
		MaxClientConnections: 4,
		IdleTimeout:          300 * time.Millisecond,
	})
	req := "GET http://allowed.test:" + port + "/ HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n"
	doortest.CheckBounds(t, tp.addr, 4, req, http.StatusOK)
	if s := tp.DoorStats(); s.RefusedCap != 8 || s.RefusedReserve != 0 {
		t.Errorf("door stats %+v, want 8 refused at the cap", s)
	}
}

// TestDoorTunnelsCount: held tunnels take the door's slots too.
func TestDoorTunnelsCount(t *testing.T) {
	port := echoServer(t)
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}, MaxClientConnections: 2})
	for range 2 {
		if _, _, resp := tp.connect(t, "allowed.test:"+port); resp.StatusCode != http.StatusOK {
			t.Fatalf("tunnel below the cap: %s", resp.Status)
		}
	}
	c := doortest.Dial(t, tp.addr)
	st, why, _, err := c.Do("CONNECT allowed.test:" + port + " HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n")
	if err == nil && st != http.StatusServiceUnavailable {
		t.Fatalf("a third tunnel: status %d refused %q, want 503", st, why)
	}
	c.WaitClosed(t)
}
