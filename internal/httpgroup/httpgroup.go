// Package httpgroup serves one handler's http.Servers on any number of
// listeners in the background and shuts them down together: the doors —
// the model gateway, the egress proxy and the MCP bridge — each served on
// a loopback listener or on a sandbox's door, every listener of a door
// under the door's one connection cap (doorcap.Limit) and its idle and
// header timeouts (NewServer). It owns only the servers and their serve
// loops, never the handlers' own state.
package httpgroup

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/harnessd/harnessd/internal/doorcap"
)

// Group is a set of servers started by Serve. The zero value is ready;
// Closed is the error Serve returns after Shutdown (nil: ErrClosed).
type Group struct {
	// Closed is returned by Serve once Shutdown has begun.
	Closed error
	// Limit, when set, caps the connections of all the group's listeners
	// together (a door's cap, and the process's descriptor reserve).
	Limit *doorcap.Limit

	mu      sync.Mutex
	closed  bool
	servers []*http.Server
	wg      sync.WaitGroup
}

// ErrClosed is Serve's error after Shutdown when Group.Closed is nil.
var ErrClosed = errors.New("server group closed")

// MaxHeaderBytes bounds a door request's header (Go's default is 1 MiB,
// which every one of a door's connections could make the daemon hold
// before any credential is checked).
const MaxHeaderBytes = 64 << 10

// NewServer returns a door's http.Server for h: b's idle and header
// timeouts (their defaults for zero fields), headers of at most
// MaxHeaderBytes, the server's own errors to log at debug.
func NewServer(h http.Handler, b doorcap.Bounds, log *slog.Logger) *http.Server {
	b = b.WithDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: b.ReadHeaderTimeout,
		IdleTimeout:       b.IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

// Serve runs srv on ln in the background until Shutdown; ln is the
// group's to close from now on, and its connections count against Limit.
// A serve loop that ends with an error of its own is logged on log (at
// warn, naming what and the address).
func (g *Group) Serve(srv *http.Server, ln net.Listener, log *slog.Logger, what string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		ln.Close()
		if g.Closed != nil {
			return g.Closed
		}
		return ErrClosed
	}
	if g.Limit != nil {
		ln = g.Limit.Listen(ln)
	}
	g.servers = append(g.servers, srv)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn(what+": serve ended", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return nil
}

// Shutdown stops every server: no new connections, requests in flight
// until ctx ends, then every connection closed; it waits for the serve
// loops. Hijacked connections are the handler's to end. It is idempotent
// and returns the servers' errors other than ctx's ending.
func (g *Group) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	servers := g.servers
	g.servers = nil
	g.mu.Unlock()
	var errs []error
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				errs = append(errs, err)
			}
		}
	}
	g.wg.Wait()
	return errors.Join(errs...)
}
