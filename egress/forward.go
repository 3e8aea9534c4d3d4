package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
)

// forwardKey carries a forwarded request's checked destination from
// serveForward to the upstream transport's dialer.
type forwardKey struct{}

// forward is one forwarded request's state, shared with the transport.
type forward struct {
	p        *Proxy
	addrs    []netip.Addr
	port     uint16
	up, down atomic.Int64

	mu     sync.Mutex
	addr   netip.AddrPort
	status int
	reason string
}

func (f *forward) set(status int, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.reason = status, reason
}

// serveForward serves an absolute-URI http:// request through a reverse
// proxy whose only way out is the destination checked here.
func (p *Proxy) serveForward(w http.ResponseWriter, r *http.Request, c *Connection) {
	switch {
	case !r.URL.IsAbs() || r.URL.Host == "":
		p.refuse(w, c, http.StatusBadRequest, "this is a forward proxy: send an absolute URI (GET http://host/path) or CONNECT host:port")
		return
	case r.URL.Scheme != "http":
		p.refuse(w, c, http.StatusBadRequest, "only http:// requests are forwarded; use CONNECT host:port for "+quoteShort(r.URL.Scheme))
		return
	case r.Header.Get("Upgrade") != "":
		p.refuse(w, c, http.StatusBadRequest, "protocol upgrades are not forwarded over plain HTTP; use CONNECT host:port")
		return
	}
	c.Host = r.URL.Hostname()
	port := uint16(80)
	if ps := r.URL.Port(); ps != "" {
		n, err := parsePort(ps)
		if err != nil {
			p.refuse(w, c, http.StatusBadRequest, err.Error())
			return
		}
		port = n
	}
	c.Port = port
	v := p.take(r.Context(), c.Host, port)
	if v.reason != "" {
		c.Denied = v.denied
		p.refuse(w, c, v.status, v.reason)
		return
	}
	defer p.release()
	c.Allowed = true
	f := &forward{p: p, addrs: v.addrs, port: port}
	defer func() {
		f.mu.Lock()
		c.Addr, c.Status, c.Reason = f.addr, f.status, f.reason
		f.mu.Unlock()
		c.BytesUp, c.BytesDown = f.up.Load(), f.down.Load()
		// The reverse proxy aborts the handler (http.ErrAbortHandler) when
		// the upstream fails in the middle of a response: record it, and
		// let net/http drop the client connection.
		if v := recover(); v != nil {
			c.Reason = fmt.Sprintf("the response was cut off: %v", v)
			panic(v)
		}
	}()
	p.fwd.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, f)))
}

// newUpstreamTransport is the transport of forwarded requests: no proxy of
// its own, no pooling (each request dials its own checked address and is
// counted alone), no compression of its own.
func newUpstreamTransport(o Options) *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		ResponseHeaderTimeout:  o.IdleTimeout,
		MaxResponseHeaderBytes: 1 << 20,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			f, ok := ctx.Value(forwardKey{}).(*forward)
			if !ok {
				return nil, errNoDestination
			}
			conn, addr, err := f.p.dial(ctx, f.addrs, f.port)
			if err != nil {
				return nil, err
			}
			f.mu.Lock()
			f.addr = addr
			f.mu.Unlock()
			return &countConn{Conn: conn, idle: o.IdleTimeout, up: &f.up, down: &f.down}, nil
		},
	}
}

// errNoDestination guards the transport against a request that did not come
// through serveForward.
var errNoDestination = errors.New("egress: no checked destination for this request")

// newForwarder is the reverse proxy of plain-HTTP requests. It strips
// hop-by-hop headers both ways (Proxy-Authorization among them), adds no
// X-Forwarded-* headers and drops the URL's user information.
func newForwarder(tr *http.Transport, log *slog.Logger) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := *pr.In.URL
			u.User = nil
			pr.Out.URL = &u
			pr.Out.Host = ""
			pr.Out.RequestURI = ""
			pr.Out.Header.Del("Proxy-Authorization")
			pr.Out.Header.Del("Proxy-Connection")
		},
		ModifyResponse: func(resp *http.Response) error {
			if f, ok := resp.Request.Context().Value(forwardKey{}).(*forward); ok {
				f.set(resp.StatusCode, "")
			}
			resp.Header.Del("Proxy-Authenticate")
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			reason := "upstream request failed: " + err.Error()
			if f, ok := r.Context().Value(forwardKey{}).(*forward); ok {
				f.set(http.StatusBadGateway, reason)
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("egress: " + strings.TrimSpace(reason) + "\n"))
		},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}
