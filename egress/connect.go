package egress

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// serveConnect serves CONNECT host:port: check, dial, hijack, answer 200
// and relay bytes both ways until both sides are done or the tunnel idles.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request, c *Connection) {
	host, ps, err := net.SplitHostPort(r.Host)
	if err != nil || host == "" {
		p.refuse(w, c, http.StatusBadRequest, "CONNECT needs host:port, got "+quoteShort(r.Host))
		return
	}
	c.Host = host
	port, err := parsePort(ps)
	if err != nil {
		p.refuse(w, c, http.StatusBadRequest, err.Error())
		return
	}
	c.Port = port
	v := p.take(r.Context(), host, port)
	if v.reason != "" {
		c.Denied = v.denied
		p.refuse(w, c, v.status, v.reason)
		return
	}
	defer p.release()
	c.Allowed = true
	upstream, addr, err := p.dial(r.Context(), v.addrs, port)
	if err != nil {
		p.refuse(w, c, http.StatusBadGateway, err.Error())
		return
	}
	c.Addr = addr
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		p.refuse(w, c, http.StatusInternalServerError, "this connection cannot carry a tunnel (HTTP/1.1 only)")
		return
	}
	t := &tunnel{client: client, upstream: upstream, idle: p.opts.IdleTimeout}
	if !p.track(t) {
		client.Close()
		upstream.Close()
		c.Status, c.Reason = http.StatusServiceUnavailable, "the egress proxy is closed"
		return
	}
	defer p.untrack(t)
	_ = client.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		t.abort()
		c.Status, c.Reason = http.StatusOK, "client went away: "+err.Error()
		return
	}
	c.Status = http.StatusOK
	// Bytes the client sent after its CONNECT header (a pipelined TLS
	// ClientHello) are already in the server's buffer.
	var early []byte
	if n := brw.Reader.Buffered(); n > 0 {
		early, _ = brw.Reader.Peek(n)
	}
	t.run(early)
	c.BytesUp, c.BytesDown = t.up.Load(), t.down.Load()
	c.Reason = t.reason()
}

// track registers a tunnel for Close; false when the proxy is closed.
func (p *Proxy) track(t *tunnel) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.tunnels[t] = struct{}{}
	return true
}

func (p *Proxy) untrack(t *tunnel) {
	p.mu.Lock()
	delete(p.tunnels, t)
	p.mu.Unlock()
}

// tunnel relays one CONNECT's bytes between the client and the upstream.
type tunnel struct {
	client, upstream net.Conn
	idle             time.Duration

	up, down atomic.Int64
	last     atomic.Int64 // unix nanoseconds of the last byte moved
	ended    atomic.Bool  // aborted: both connections closed
	once     sync.Once
	mu       sync.Mutex
	why      string      // why the tunnel ended early
	timer    *time.Timer // the idle watchdog while the tunnel runs
}

// run relays until both directions end; early is sent upstream first.
func (t *tunnel) run(early []byte) {
	t.touch()
	if len(early) > 0 {
		_ = t.upstream.SetWriteDeadline(time.Now().Add(t.idle))
		n, err := t.upstream.Write(early)
		t.up.Add(int64(n))
		if err != nil {
			t.fail("upstream write: " + err.Error())
			return
		}
		_ = t.upstream.SetWriteDeadline(time.Time{}) // see pump
	}
	t.mu.Lock()
	t.timer = time.AfterFunc(t.idle/2, t.watch)
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.timer.Stop()
		t.timer = nil
		t.mu.Unlock()
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t.pump(t.client, t.upstream, &t.down, "upstream")
	}()
	t.pump(t.upstream, t.client, &t.up, "client")
	wg.Wait()
	t.abort()
}

// pump copies src to dst until src ends (then half-closes dst) or either
// fails (then aborts the tunnel). It copies in rounds of half the idle
// timeout (a read deadline on src; io.Copy between two TCP connections
// splices in the kernel), marking activity after each round that moved
// bytes; the watchdog of run decides when the tunnel is idle. Only read
// deadlines are set: a write deadline could cut a splice with bytes still in
// its pipe, losing them.
func (t *tunnel) pump(dst, src net.Conn, count *atomic.Int64, srcName string) {
	for {
		_ = src.SetReadDeadline(time.Now().Add(t.idle / 2))
		n, err := io.Copy(dst, src)
		count.Add(n)
		if n > 0 {
			t.touch()
		}
		switch {
		case err == nil:
			if cw, ok := dst.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			} else {
				t.abort()
			}
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			if t.ended.Load() {
				return
			}
		default:
			t.fail(srcName + ": " + err.Error())
			return
		}
	}
}

// watch ends the tunnel once no round has moved a byte for the idle
// timeout; it re-arms itself every half idle timeout until stopped.
func (t *tunnel) watch() {
	if t.ended.Load() {
		return
	}
	if time.Since(time.Unix(0, t.last.Load())) >= t.idle {
		t.fail("idle for " + t.idle.String())
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Reset(t.idle / 2)
	}
}

func (t *tunnel) touch() { t.last.Store(time.Now().UnixNano()) }

// fail records the first reason the tunnel ended early and aborts it.
func (t *tunnel) fail(why string) {
	t.mu.Lock()
	if t.why == "" {
		t.why = why
	}
	t.mu.Unlock()
	t.abort()
}

// abort closes both sides; the pumps then end.
func (t *tunnel) abort() {
	t.once.Do(func() {
		t.ended.Store(true)
		t.client.Close()
		t.upstream.Close()
	})
}

func (t *tunnel) reason() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.why
}

// quoteShort quotes s for a message, cut to 100 bytes.
func quoteShort(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return `"` + s + `"`
}
