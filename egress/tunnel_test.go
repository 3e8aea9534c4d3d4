package egress

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTunnelByteCounts: the report of a tunnel counts exactly the payload
// each way, including bytes pipelined right behind the CONNECT header; the
// echo of exactly the payload shows that nothing of the CONNECT request
// (its Proxy-Authorization) reached the upstream.
func TestTunnelByteCounts(t *testing.T) {
	port := echoServer(t)
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}})
	conn, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	early := "pipelined-before-the-200 "
	payload := bytes.Repeat([]byte("x"), 300_000)
	if _, err := io.WriteString(conn, "CONNECT allowed.test:"+port+" HTTP/1.1\r\nHost: allowed.test:"+port+"\r\nProxy-Authorization: Basic c2VjcmV0\r\n\r\n"+early); err != nil {
		t.Fatal(err)
	}
	br := bufioReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	go func() {
		conn.Write(payload)
		conn.(*net.TCPConn).CloseWrite()
	}()
	back, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if want := early + string(payload); string(back) != want {
		t.Fatalf("echo: %d bytes back, want %d", len(back), len(want))
	}
	c := tp.reports.next(t)
	n := int64(len(early) + len(payload))
	if c.BytesUp != n || c.BytesDown != n || c.Reason != "" || c.Status != 200 {
		t.Fatalf("report %+v, want %d bytes each way and no reason", c, n)
	}
	if c.Duration <= 0 || c.Start.IsZero() {
		t.Fatalf("report times: %+v", c)
	}
}

// TestConcurrencyCap: with MaxConnections tunnels open, one more gets 503
// and is not dialled; once one closes, a new one opens.
func TestConcurrencyCap(t *testing.T) {
	port := echoServer(t)
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}, MaxConnections: 2})
	target := "allowed.test:" + port
	var open []net.Conn
	for range 2 {
		conn, _, resp := tp.connect(t, target)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %d", resp.StatusCode)
		}
		open = append(open, conn)
	}
	_, _, resp := tp.connect(t, target)
	if b := body(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(b, "too many concurrent connections (limit 2)") {
		t.Fatalf("third CONNECT: %d %q", resp.StatusCode, b)
	}
	if c := tp.reports.next(t); c.Status != 503 {
		t.Fatalf("report %+v", c)
	}
	if d := tp.dialer.dials(); len(d) != 2 {
		t.Fatalf("dials %v", d)
	}
	open[0].Close()
	if c := tp.reports.next(t); c.Status != 200 {
		t.Fatalf("closed tunnel's report %+v", c)
	}
	conn, br, resp := tp.connect(t, target)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT after a slot freed: %d", resp.StatusCode)
	}
	io.WriteString(conn, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo %q %v", buf, err)
	}
}

// TestTunnelIdleTimeout: a tunnel on which nothing moves is ended and its
// report says why.
func TestTunnelIdleTimeout(t *testing.T) {
	port := echoServer(t)
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}, IdleTimeout: 50 * time.Millisecond})
	_, br, resp := tp.connect(t, "allowed.test:"+port)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	if _, err := br.ReadByte(); err == nil || !isClosed(err) {
		t.Fatalf("read on an idle tunnel: %v", err)
	}
	if c := tp.reports.next(t); !strings.Contains(c.Reason, "idle for 50ms") {
		t.Fatalf("report %+v", c)
	}
}

// TestCloseEndsTunnels: Close ends open tunnels, returns, and a proxy
// closed refuses new work.
func TestCloseEndsTunnels(t *testing.T) {
	port := echoServer(t)
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}})
	_, br, resp := tp.connect(t, "allowed.test:"+port)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("tunnel still open after Close")
	}
	if c := tp.reports.next(t); c.Reason != "the egress proxy closed" {
		t.Fatalf("report %+v", c)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Serve(ln); err != ErrClosed {
		t.Fatalf("Serve after Close: %v", err)
	}
}

// TestTunnelActiveOneWayOutlivesIdle: a tunnel whose upstream keeps
// sending while the client stays silent is not idle: it outlives twice the
// idle timeout and delivers every byte.
func TestTunnelActiveOneWayOutlivesIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const writes = 40
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for range writes {
			if _, err := c.Write([]byte{'x'}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond) // 2 s in all, twice the idle timeout
		}
	}()
	defer func() {
		ln.Close()
		<-done
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}, IdleTimeout: time.Second})
	conn, br, resp := tp.connect(t, "allowed.test:"+port)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	got, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if len(got) != writes {
		t.Fatalf("%d of %d bytes arrived", len(got), writes)
	}
	if c := tp.reports.next(t); c.Reason != "" || c.BytesDown != writes {
		t.Fatalf("report %+v", c)
	}
}

// TestTunnelPipelinedThenLong: a tunnel that began with pipelined bytes
// keeps relaying long after the idle timeout, as long as bytes move (the
// write of the pipelined bytes leaves no deadline behind).
func TestTunnelPipelinedThenLong(t *testing.T) {
	port := echoServer(t)
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}, IdleTimeout: time.Second})
	conn, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "CONNECT allowed.test:"+port+" HTTP/1.1\r\nHost: allowed.test:"+port+"\r\n\r\nE"); err != nil {
		t.Fatal(err)
	}
	br := bufioReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	const rounds = 25 // 100 ms apart: 2.5 s in all
	buf := make([]byte, 1)
	for i := 0; i <= rounds; i++ {
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
			if _, err := conn.Write([]byte{'a' + byte(i%26)}); err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		if _, err := io.ReadFull(br, buf); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	conn.Close()
	if c := tp.reports.next(t); c.Reason != "" || c.BytesUp != rounds+1 || c.BytesDown != rounds+1 {
		t.Fatalf("report %+v", c)
	}
}
