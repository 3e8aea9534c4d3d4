// Package client is a Go client for harnessd: Env speaks OpenEnv's generic
// /ws protocol (reset, step, state, mcp, close) one request at a time, and
// Harness speaks the streaming /harness protocol (session_started, events,
// turn_complete, cancel). It is used by `harnessd chat`, the demo, tests and
// Go trainers.
//
// The package owns only the wire: it holds no environment state.
package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/internal/bearer"
)

// DefaultMaxFrameBytes bounds a frame read from the server (as OpenEnv's
// Python client does).
const DefaultMaxFrameBytes = 100 << 20

// Options configure a connection.
type Options struct {
	// Token is sent as Authorization: Bearer.
	Token string
	// Header adds request headers to the upgrade.
	Header http.Header
	// MaxFrameBytes bounds incoming frames (default 100 MiB).
	MaxFrameBytes int64
	// HTTPClient is used for the upgrade request.
	HTTPClient *http.Client
}

// ServerError is an error frame from the server.
type ServerError struct {
	Code    string
	Message string
	Data    map[string]any
}

// Error is the server's message and code, and each field error it gave
// ("episode_id: String should not contain control characters"): the
// message alone is "Invalid message" for every refused field.
func (e *ServerError) Error() string {
	s := fmt.Sprintf("server error: %s (code: %s)", e.Message, e.Code)
	if f := e.FieldErrors(); len(f) > 0 {
		s += ": " + strings.Join(f, "; ")
	}
	return s
}

// FieldErrors are the error's field errors (the pydantic-style "errors"
// of a VALIDATION_ERROR), each as "loc: msg", loc's parts joined with
// dots; nil when it has none.
func (e *ServerError) FieldErrors() []string {
	list, _ := e.Data["errors"].([]any)
	var out []string
	for _, x := range list {
		m, _ := x.(map[string]any)
		msg, _ := m["msg"].(string)
		if msg == "" {
			continue
		}
		var loc []string
		parts, _ := m["loc"].([]any)
		for _, p := range parts {
			loc = append(loc, fmt.Sprint(p))
		}
		if len(loc) > 0 {
			msg = strings.Join(loc, ".") + ": " + msg
		}
		out = append(out, msg)
	}
	return out
}

// ErrClosed is returned after the connection has ended.
var ErrClosed = errors.New("connection closed")

// wsURL turns http(s)://host[:port][/path] into ws(s)://.../path+suffix.
func wsURL(base, suffix string) (string, error) {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("unsupported URL scheme %q", u.Scheme)
	}
	// A base that already ends with the route (ws://host/ws, as the
	// server's own address reads) is the route, not a prefix of it.
	if p := strings.TrimSuffix(u.Path, "/"); !strings.HasSuffix(p, suffix) {
		u.Path = p + suffix
	} else {
		u.Path = p
	}
	return u.String(), nil
}

// conn is a WebSocket with a background reader, so that pings are answered
// between requests, and serialised writes.
type conn struct {
	c      *websocket.Conn
	frames chan []byte
	done   chan struct{}
	err    error
	ctx    context.Context
	cancel context.CancelFunc
	wmu    sync.Mutex
}

// HTTPStatusError is a connection the server answered with an HTTP
// status instead of the WebSocket upgrade: 401 for a missing or wrong API
// token (Options.Token), 503 at capacity.
type HTTPStatusError struct {
	URL    string // the WebSocket URL dialled
	Status int    // the HTTP status
	Err    error  // the WebSocket library's error
}

func (e *HTTPStatusError) Error() string {
	return fmt.Sprintf("connect %s: HTTP %d: %v", e.URL, e.Status, e.Err)
}

// Unwrap returns the WebSocket library's error.
func (e *HTTPStatusError) Unwrap() error { return e.Err }

func dial(ctx context.Context, u string, opts *Options) (*conn, error) {
	if opts == nil {
		opts = &Options{}
	}
	h := http.Header{}
	for k, v := range opts.Header {
		h[k] = v
	}
	if opts.Token != "" {
		h.Set(bearer.HeaderName, bearer.Header(opts.Token))
	}
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h, HTTPClient: opts.HTTPClient})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, &HTTPStatusError{URL: u, Status: resp.StatusCode, Err: err}
		}
		return nil, fmt.Errorf("connect %s: %w", u, err)
	}
	max := opts.MaxFrameBytes
	if max <= 0 {
		max = DefaultMaxFrameBytes
	}
	c.SetReadLimit(max)
	cctx, cancel := context.WithCancel(context.Background())
	cn := &conn{c: c, frames: make(chan []byte, 64), done: make(chan struct{}), ctx: cctx, cancel: cancel}
	go cn.readLoop()
	return cn, nil
}

func (cn *conn) readLoop() {
	defer close(cn.done)
	for {
		_, b, err := cn.c.Read(cn.ctx)
		if err != nil {
			cn.err = err
			return
		}
		select {
		case cn.frames <- b:
		case <-cn.ctx.Done():
			return
		}
	}
}

func (cn *conn) write(ctx context.Context, b []byte) error {
	cn.wmu.Lock()
	err := cn.c.Write(ctx, websocket.MessageText, b)
	cn.wmu.Unlock()
	if err == nil {
		return nil
	}
	if ctx.Err() == nil {
		// The server may have closed the connection (e.g. 1001 when it
		// shuts down): report that, as ErrClosed, once the reader saw it.
		select {
		case <-cn.done:
			return fmt.Errorf("send: %w", cn.closedErr())
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("send: %w", err)
}

// pending returns a frame the server sent before it closed the connection
// (a session-level error), once the reader has stopped.
func (cn *conn) pending() ([]byte, bool) {
	select {
	case <-cn.done:
	case <-time.After(time.Second):
		return nil, false
	}
	select {
	case b := <-cn.frames:
		return b, true
	default:
		return nil, false
	}
}

// next returns the next frame.
func (cn *conn) next(ctx context.Context) ([]byte, error) {
	select {
	case b := <-cn.frames:
		return b, nil
	case <-cn.done:
		select {
		case b := <-cn.frames:
			return b, nil
		default:
		}
		return nil, cn.closedErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (cn *conn) closedErr() error {
	if cn.err == nil {
		return ErrClosed
	}
	if s := websocket.CloseStatus(cn.err); s != -1 {
		var ce websocket.CloseError
		errors.As(cn.err, &ce)
		return fmt.Errorf("%w: %d %s", ErrClosed, s, ce.Reason)
	}
	return fmt.Errorf("%w: %v", ErrClosed, cn.err)
}

func (cn *conn) close() error {
	cn.wmu.Lock()
	err := cn.c.Close(websocket.StatusNormalClosure, "")
	cn.wmu.Unlock()
	cn.cancel()
	<-cn.done
	// The server may have closed first (close frame, drain): that is a
	// closed connection, not a failure to close.
	if err != nil && websocket.CloseStatus(err) == -1 && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
