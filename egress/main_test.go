package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// hosts is a test resolver: names to addresses, counting lookups.
type hosts struct {
	m       map[string][]netip.Addr
	lookups atomic.Int64
}

func (h *hosts) resolve(_ context.Context, host string) ([]netip.Addr, error) {
	h.lookups.Add(1)
	a, ok := h.m[host]
	if !ok {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return a, nil
}

// dialer dials for real on loopback and counts the dials and their
// targets; with nowhere set it records them and connects nowhere (for
// addresses a test must not send traffic to).
type dialer struct {
	mu      sync.Mutex
	addrs   []string
	nowhere bool
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	if d.nowhere {
		return nil, errors.New("not dialled")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *dialer) dials() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// reports collects OnConnection's reports.
type reports struct{ ch chan Connection }

func newReports() *reports { return &reports{ch: make(chan Connection, 256)} }

func (r *reports) add(c Connection) { r.ch <- c }

// next waits for the next report.
func (r *reports) next(t testing.TB) Connection {
	t.Helper()
	return <-r.ch
}

// testProxy is a proxy on 127.0.0.1 with its resolver, dialer and reports.
type testProxy struct {
	*Proxy
	addr    string
	hosts   *hosts
	dialer  *dialer
	reports *reports
}

func loop(addr string) []netip.Addr { return []netip.Addr{netip.MustParseAddr(addr)} }

// startProxy serves a proxy for opts on loopback. Unless opts says
// otherwise the guard denies nothing (tests reach their own loopback
// servers), allowed.test and other.test resolve to 127.0.0.1, and every
// dial is recorded.
func startProxy(t testing.TB, opts Options) *testProxy {
	t.Helper()
	tp := &testProxy{
		hosts:   &hosts{m: map[string][]netip.Addr{"allowed.test": loop("127.0.0.1"), "other.test": loop("127.0.0.1")}},
		dialer:  &dialer{},
		reports: newReports(),
	}
	if opts.Deny == nil {
		opts.Deny = []netip.Prefix{}
	}
	if opts.Resolve == nil {
		opts.Resolve = tp.hosts.resolve
	}
	opts.Dial = tp.dialer.dial
	opts.OnConnection = tp.reports.add
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Serve(ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	tp.Proxy, tp.addr = p, ln.Addr().String()
	return tp
}

// connect opens a connection to the proxy and sends CONNECT target,
// returning the connection, its reader and the response.
func (tp *testProxy) connect(t testing.TB, target string, extra ...string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	for _, h := range extra {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return conn, br, resp
}

// body reads and closes resp's body.
func body(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// echoServer is a raw TCP echo server on loopback; it returns its port.
func echoServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// isClosed reports whether err says the connection ended.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset by peer")
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
