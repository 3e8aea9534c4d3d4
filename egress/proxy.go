package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/httpgroup"
)

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("egress: proxy closed")

// Proxy is the egress door: an http.Handler serving CONNECT tunnels and
// absolute-URI plain-HTTP forwarding under a Policy and the address guard.
// Serve it on a listener with Serve, or mount it on an http.Server of the
// caller's (which must speak HTTP/1.1: tunnels hijack the connection).
type Proxy struct {
	opts     Options
	patterns []Pattern
	guard    guard
	slots    chan struct{}
	fwd      *httputil.ReverseProxy
	upstream *http.Transport
	log      *slog.Logger

	servers httpgroup.Group // its Serve loops

	mu      sync.Mutex
	closed  bool
	tunnels map[*tunnel]struct{}
	wg      sync.WaitGroup // requests in flight
}

// New returns a proxy for opts; it fails when the policy has a bad pattern.
func New(opts Options) (*Proxy, error) {
	pats, err := opts.Policy.Patterns()
	if err != nil {
		return nil, fmt.Errorf("egress: policy: %w", err)
	}
	opts = opts.withDefaults()
	// Upstream connections stay out of the daemon's descriptor reserve, as
	// the harness's own connections to the door do.
	opts.Dial = doorcap.GuardDial(opts.Dial)
	p := &Proxy{
		opts:     opts,
		patterns: pats,
		guard:    newGuard(opts.Deny, opts.DenyAddrs),
		slots:    make(chan struct{}, opts.MaxConnections),
		log:      opts.Logger,
		tunnels:  map[*tunnel]struct{}{},
	}
	p.servers.Closed = ErrClosed
	p.servers.Limit = doorcap.NewLimit(p.bounds(), "egress", p.log)
	p.upstream = newUpstreamTransport(opts)
	p.fwd = newForwarder(p.upstream, p.log)
	return p, nil
}

// Serve serves the proxy on ln in the background (ln is the caller's to
// open, and the proxy's to close from now on). It returns ErrClosed, closing
// ln, after Close.
// All its listeners together hold at most Options.MaxClientConnections
// client connections (tunnels included).
func (p *Proxy) Serve(ln net.Listener) error {
	srv := httpgroup.NewServer(p, p.bounds(), p.log)
	srv.MaxHeaderBytes = p.opts.MaxHeaderBytes
	return p.servers.Serve(srv, ln, p.log, "egress")
}

// bounds are the proxy's door bounds.
func (p *Proxy) bounds() doorcap.Bounds {
	return doorcap.Bounds{MaxConns: p.opts.MaxClientConnections, IdleTimeout: p.opts.IdleTimeout, ReadHeaderTimeout: p.opts.ReadHeaderTimeout}
}

// DoorStats counts the harness's connections to the proxy: held now, and
// refused at its cap or at the daemon's descriptor reserve.
func (p *Proxy) DoorStats() doorcap.Stats { return p.servers.Limit.Stats() }

// Close stops the proxy: it stops accepting, waits for forwarded requests
// in flight until ctx ends, ends every tunnel at once (the episode they
// belong to is over), and waits for the handlers to return. Idempotent.
func (p *Proxy) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.servers.Shutdown(ctx)
	p.mu.Lock()
	for t := range p.tunnels {
		t.fail("the egress proxy closed")
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.upstream.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("egress: close: %w", err)
	}
	return nil
}

// ServeHTTP serves one proxy request: CONNECT host:port, or an
// absolute-URI http:// request. Anything else gets 400.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := Connection{Start: time.Now(), RequestMethod: r.Method}
	if !p.enter() {
		c.Method = MethodHTTP
		if r.Method == http.MethodConnect {
			c.Method = MethodConnect
		}
		p.refuse(w, &c, http.StatusServiceUnavailable, "the egress proxy is closed")
		p.report(&c)
		return
	}
	defer p.wg.Done()
	defer p.report(&c)
	if r.Method == http.MethodConnect {
		c.Method = MethodConnect
		p.serveConnect(w, r, &c)
	} else {
		c.Method = MethodHTTP
		p.serveForward(w, r, &c)
	}
}

// enter counts a request in flight unless the proxy is closed.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// report stamps c's duration and hands it to OnConnection.
func (p *Proxy) report(c *Connection) {
	c.Duration = time.Since(c.Start)
	if p.opts.OnConnection != nil {
		p.opts.OnConnection(*c)
	}
}

// refuse answers status with a plain-text reason and records it in c.
func (p *Proxy) refuse(w http.ResponseWriter, c *Connection, status int, reason string) {
	c.Status = status
	c.Reason = reason
	w.Header().Set("Connection", "close")
	http.Error(w, "egress: "+reason, status)
}

// acquire takes a connection slot without waiting; release gives it back.
func (p *Proxy) acquire() bool {
	select {
	case p.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (p *Proxy) release() { <-p.slots }

// tooMany is the refusal when every slot is taken.
func (p *Proxy) tooMany() string {
	return fmt.Sprintf("too many concurrent connections (limit %d)", p.opts.MaxConnections)
}
