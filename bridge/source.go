package bridge

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Source is one upstream tool server. Implementations are safe for
// concurrent use. A source can be started again after Close.
type Source interface {
	// Name identifies the source in errors, logs and call records.
	Name() string
	// Start connects (HTTP), spawns and initializes (stdio) or readies the
	// source. It is a no-op while the source is started.
	Start(ctx context.Context) error
	// Tools lists every tool of the source (all pages).
	Tools(ctx context.Context) ([]Tool, error)
	// Call calls the tool name (the upstream's name) with args (a JSON
	// object, or empty for none). Failures of the tool server itself (not
	// running, timeout, protocol error) are errors wrapping ErrNotRunning,
	// ErrTimeout or ErrUpstream; a tool's own failure is a result with
	// IsError set.
	Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error)
	// Restart respawns a stdio upstream or reconnects an HTTP one. Calls in
	// flight on the old connection fail.
	Restart(ctx context.Context) error
	// Close stops the upstream (stdio: its whole process tree). It is
	// idempotent.
	Close(ctx context.Context) error
}

// DefaultCallTimeout bounds one tool call when a spec or option leaves the
// timeout zero.
const DefaultCallTimeout = 60 * time.Second

// UpstreamProtocolVersion is the MCP version the bridge pins when it
// connects to an upstream (faster than the stateless 2026-07-28 core over
// stdio, and spoken by every current server SDK).
const UpstreamProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION // "2025-11-25"

// callTimeout resolves a configured timeout: zero means the default,
// negative means none.
func callTimeout(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultCallTimeout
	case d < 0:
		return 0
	}
	return d
}

// ProgressFunc receives progress of a running tool call. It must not block.
type ProgressFunc func(progress, total float64, message string)

type progressKey struct{}

// WithProgress returns a context under which a Source.Call or Catalog.Call
// relays the upstream's progress notifications to fn (best effort).
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// progressFrom returns the ProgressFunc of ctx, or nil.
func progressFrom(ctx context.Context) ProgressFunc {
	fn, _ := ctx.Value(progressKey{}).(ProgressFunc)
	return fn
}

// ReportProgress reports progress of the current call from a GoTool
// handler. It does nothing when the caller asked for no progress.
func ReportProgress(ctx context.Context, progress, total float64, message string) {
	if fn := progressFrom(ctx); fn != nil {
		fn(progress, total, message)
	}
}
