// Package doortest checks a door's connection bounds from the outside, for
// the tests of the doors (the bridge, the model gateway, the egress
// proxy): raw keep-alive connections on real sockets. It owns only test
// clients; it must not start or configure doors.
package doortest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/doorcap"
)

// wait bounds every read and write of a check.
const wait = 5 * time.Second

// Conn is one raw client connection to a door.
type Conn struct {
	net.Conn
	r *bufio.Reader
}

// Dial connects to addr; the connection closes when the test ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		t.Fatalf("dial the door %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &Conn{Conn: c, r: bufio.NewReader(c)}
}

// Do sends the raw request req and reads its answer: the status, the
// refusal the door named (X-Harnessd-Refused) and whether the answer said
// Connection: close. err is set when the connection ended without one.
func (c *Conn) Do(req string) (status int, refused string, closing bool, err error) {
	_ = c.SetDeadline(time.Now().Add(wait))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, req); err != nil {
		return 0, "", false, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, "", false, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Harnessd-Refused"), resp.Close, nil
}

// WaitClosed waits (up to 5 s) for the door to end the connection,
// discarding whatever it still sends; it fails the test if the
// connection is still open then.
func (c *Conn) WaitClosed(t testing.TB) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := io.Copy(io.Discard, c.r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the door kept the connection open for %s", wait)
	}
}

// CheckBounds checks a door at addr capped at max connections with a short
// idle timeout: max connections each sending req get want and stay open;
// 2*max more are refused (a 503 naming the cap, or closed unanswered); the
// held ones are closed by the door once idle; then a new connection is
// served again.
func CheckBounds(t testing.TB, addr string, max int, req string, want int) {
	t.Helper()
	var held []*Conn
	for i := range max {
		c := Dial(t, addr)
		st, why, _, err := c.Do(req)
		if err != nil || st != want {
			t.Fatalf("connection %d of %d (below the cap): status %d refused %q err %v, want %d", i+1, max, st, why, err, want)
		}
		held = append(held, c)
	}
	for i := range 2 * max {
		c := Dial(t, addr)
		st, why, _, err := c.Do(req)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d over the cap of %d: no answer in %s: %v", i+1, max, wait, err)
		}
		if err == nil && (st != http.StatusServiceUnavailable || why != doorcap.ReasonCap) {
			t.Fatalf("connection %d over the cap of %d: status %d refused %q, want 503 %s", i+1, max, st, why, doorcap.ReasonCap)
		}
		c.WaitClosed(t)
	}
	for _, c := range held {
		c.WaitClosed(t)
	}
	c := Dial(t, addr)
	if st, why, _, err := c.Do(req); err != nil || st != want {
		t.Fatalf("after the idle connections closed: status %d refused %q err %v, want %d", st, why, err, want)
	}
	c.Close()
}
