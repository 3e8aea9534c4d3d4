package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// maxListPages bounds tools/list pagination against a misbehaving upstream.
const maxListPages = 10000

// mcpConn is one initialized MCP client connection to an upstream, shared by
// the stdio and HTTP sources.
type mcpConn struct {
	source   string
	c        *client.Client
	tr       transport.Interface
	log      *slog.Logger
	progress *progressRouter
}

// newMCPConn wraps tr in an mcp-go client pinned to UpstreamProtocolVersion.
// Upstream progress notifications are routed through router.
func newMCPConn(source string, tr transport.Interface, router *progressRouter, log *slog.Logger) *mcpConn {
	c := client.NewClient(tr, client.WithProtocolVersion(UpstreamProtocolVersion))
	c.OnNotification(router.handle)
	return &mcpConn{source: source, c: c, tr: tr, log: log, progress: router}
}

// initialize starts the client (which registers the notification handler)
// and performs the initialize handshake.
func (m *mcpConn) initialize(ctx context.Context) error {
	if err := m.c.Start(ctx); err != nil {
		return fmt.Errorf("start MCP client: %w", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = UpstreamProtocolVersion
	req.Params.ClientInfo = mcp.Implementation{Name: "harnessd-bridge", Version: "1"}
	if _, err := m.c.Initialize(ctx, req); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

// listSeq numbers the bridge's own tools/list requests. Their ids are
// strings, so they never collide with the client's integer ids.
var listSeq atomic.Int64

// tools lists every page of tools/list, decoding each tool from the raw
// response so that no schema keyword is lost (mcp-go's typed mcp.Tool drops
// the ones it has no field for).
func (m *mcpConn) tools(ctx context.Context) ([]Tool, error) {
	var (
		out    []Tool
		cursor string
		seen   = map[string]bool{}
	)
	for page := 0; ; page++ {
		if page >= maxListPages {
			return nil, fmt.Errorf("%w: tools/list has more than %d pages", ErrUpstream, maxListPages)
		}
		req := transport.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION,
			ID:      mcp.NewRequestId("harnessd-list-" + strconv.FormatInt(listSeq.Add(1), 10)),
			Method:  string(mcp.MethodToolsList),
		}
		if cursor != "" {
			req.Params = map[string]any{"cursor": cursor}
		}
		resp, err := m.tr.SendRequest(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("%w: tools/list: %s (code %d)", ErrUpstream, resp.Error.Message, resp.Error.Code)
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			return nil, fmt.Errorf("%w: tools/list result: %v", ErrUpstream, err)
		}
		for _, raw := range res.Tools {
			t, err := DecodeTool(raw)
			if err != nil {
				return nil, fmt.Errorf("tools/list: %w", err)
			}
			out = append(out, t)
		}
		if res.NextCursor == "" {
			return out, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("%w: tools/list repeated cursor %q", ErrUpstream, res.NextCursor)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

// call calls one tool. Arguments go upstream as the exact bytes given. When
// ctx carries a ProgressFunc, the call gets a bridge progress token and the
// upstream's progress notifications for it are relayed while it runs.
func (m *mcpConn) call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	if len(args) > 0 {
		req.Params.Arguments = args
	}
	if fn := progressFrom(ctx); fn != nil {
		tok := m.progress.register(fn)
		defer m.progress.unregister(tok)
		req.Params.Meta = &mcp.Meta{ProgressToken: tok}
	}
	return m.c.CallTool(ctx, req)
}

// close closes the client and its transport.
func (m *mcpConn) close() error { return m.c.Close() }

// isTransportError reports whether err came from the transport (the
// connection) rather than from a JSON-RPC error response.
func isTransportError(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) || errors.Is(err, transport.ErrTransportClosed)
}

// progressRouter maps the bridge's upstream progress tokens to the
// callers' ProgressFuncs.
type progressRouter struct {
	prefix string
	seq    atomic.Int64
	mu     sync.Mutex
	fns    map[string]ProgressFunc
}

func newProgressRouter(source string) *progressRouter {
	return &progressRouter{prefix: "harnessd-" + source + "-", fns: map[string]ProgressFunc{}}
}

func (r *progressRouter) register(fn ProgressFunc) string {
	tok := r.prefix + strconv.FormatInt(r.seq.Add(1), 10)
	r.mu.Lock()
	r.fns[tok] = fn
	r.mu.Unlock()
	return tok
}

func (r *progressRouter) unregister(tok string) {
	r.mu.Lock()
	delete(r.fns, tok)
	r.mu.Unlock()
}

// handle is the client's notification handler. It runs on the transport's
// reader goroutine, so it must not block (ProgressFuncs must not either).
func (r *progressRouter) handle(n mcp.JSONRPCNotification) {
	if n.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	f := n.Params.AdditionalFields
	tok, ok := f["progressToken"].(string)
	if !ok {
		return
	}
	r.mu.Lock()
	fn := r.fns[tok]
	r.mu.Unlock()
	if fn == nil {
		return // late progress of a finished call
	}
	progress, _ := f["progress"].(float64)
	total, _ := f["total"].(float64)
	msg, _ := f["message"].(string)
	fn(progress, total, msg)
}
