package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/redirect"
)

// HTTPSpec describes an upstream MCP server reached over streamable HTTP.
type HTTPSpec struct {
	// Name identifies the source.
	Name string
	// URL is the MCP endpoint, e.g. http://127.0.0.1:9000/mcp.
	URL string
	// Headers are sent with every request (e.g. Authorization).
	Headers map[string]string
	// CallTimeout bounds each call (and each tools/list); zero means
	// DefaultCallTimeout, negative means none.
	CallTimeout time.Duration
	// Dial, if set, makes every connection to the server, directly: no
	// proxy from the environment (HTTPS_PROXY) is used, so that the
	// address Dial checks is the server's. Nil: a plain net.Dialer, and the
	// environment's proxy.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// httpSource is a Source over a streamable-HTTP MCP connection.
type httpSource struct {
	spec   HTTPSpec
	log    *slog.Logger
	router *progressRouter

	mu  sync.Mutex // serializes Start, Restart and Close
	cur atomic.Pointer[httpConn]
}

type httpConn struct {
	m  *mcpConn
	hc *http.Client
}

// NewHTTPSource returns a Source that connects to spec.URL. Nothing is
// connected until Start. It keeps its own HTTP connection pool, closed by
// Close.
func NewHTTPSource(spec HTTPSpec, log *slog.Logger) Source {
	log = orDefault(log).With("source", spec.Name)
	return &httpSource{spec: spec, log: log, router: newProgressRouter(spec.Name)}
}

// Name implements Source.
func (s *httpSource) Name() string { return s.spec.Name }

// Start connects and initializes unless connected.
func (s *httpSource) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.Load() != nil {
		return nil
	}
	return s.connect(ctx)
}

// Restart drops the connection (ending its session) and connects anew.
func (s *httpSource) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur.Swap(nil); c != nil {
		c.close()
	}
	return s.connect(ctx)
}

// Close ends the session and closes idle connections.
func (s *httpSource) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur.Swap(nil); c != nil {
		c.close()
	}
	return nil
}

func (c *httpConn) close() {
	c.m.close() // sends DELETE for the session (bounded by mcp-go at 5s)
	c.hc.CloseIdleConnections()
}

// connect builds a client and initializes it. Callers hold s.mu.
func (s *httpSource) connect(ctx context.Context) error {
	if s.spec.URL == "" {
		return fmt.Errorf("tool server '%s': empty URL", s.spec.Name)
	}
	pool := http.DefaultTransport.(*http.Transport).Clone()
	// Connections to the tool server stay out of the daemon's descriptor
	// reserve, as the harness's own connections to the bridge do.
	dial := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if s.spec.Dial != nil {
		dial, pool.Proxy = s.spec.Dial, nil
	}
	pool.DialContext = doorcap.GuardDial(dial)
	// The operator's headers go to the server it named only: a redirect
	// elsewhere is refused, not followed with them.
	hc := &http.Client{Transport: pool, CheckRedirect: redirect.SameOrigin}
	tr, err := transport.NewStreamableHTTP(s.spec.URL,
		transport.WithHTTPBasicClient(hc),
		transport.WithHTTPHeaders(s.spec.Headers),
		transport.WithHTTPLogger(s.log))
	if err != nil {
		return fmt.Errorf("tool server '%s': %w", s.spec.Name, err)
	}
	c := &httpConn{m: newMCPConn(s.spec.Name, tr, s.router, s.log), hc: hc}
	ictx, cancel := withTimeout(ctx, callTimeout(s.spec.CallTimeout))
	defer cancel()
	if err := c.m.initialize(ictx); err != nil {
		c.close()
		return fmt.Errorf("connect to tool server '%s' at %s: %w", s.spec.Name, s.spec.URL, err)
	}
	s.cur.Store(c)
	return nil
}

func (s *httpSource) conn() (*httpConn, error) {
	c := s.cur.Load()
	if c == nil {
		return nil, opErr(ErrNotRunning, nil, "tool server '%s' is not running (not connected)", s.spec.Name)
	}
	return c, nil
}

// Tools lists every page of the upstream's tools/list, schemas raw.
func (s *httpSource) Tools(ctx context.Context) ([]Tool, error) {
	c, err := s.conn()
	if err != nil {
		return nil, err
	}
	cctx, cancel := withTimeout(ctx, callTimeout(s.spec.CallTimeout))
	defer cancel()
	tools, err := c.m.tools(cctx)
	if err != nil {
		return nil, s.callError(ctx, cctx, "tools/list", err)
	}
	return tools, nil
}

// Call calls a tool upstream under the source's call timeout.
func (s *httpSource) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c, err := s.conn()
	if err != nil {
		return nil, err
	}
	cctx, cancel := withTimeout(ctx, callTimeout(s.spec.CallTimeout))
	defer cancel()
	res, err := c.m.call(cctx, name, args)
	if err != nil {
		return nil, s.callError(ctx, cctx, name, err)
	}
	return res, nil
}

func (s *httpSource) callError(parent, ctx context.Context, what string, err error) error {
	if e := timeoutError(parent, ctx, s.spec.Name, what, callTimeout(s.spec.CallTimeout)); e != nil {
		return e
	}
	if isTransportError(err) {
		return opErr(ErrNotRunning, err, "tool server '%s' is not reachable: %v", s.spec.Name, err)
	}
	return upstreamError(s.spec.Name, what, err)
}
