package bridge

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// toolHandler serves tools/call for one visible entry: it records the call,
// bounds it with the per-call timeout, relays progress, and turns every
// failure into an error result the model can read (mcp-go would map a
// handler error to a bare -32603).
func (s *Server) toolHandler(e Entry) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.RawArguments
		if len(args) == 0 && req.Params.Arguments != nil {
			if b, err := json.Marshal(req.Params.Arguments); err == nil {
				args = b
			}
		}
		start := CallStart{ID: s.nextID(), Served: e.Served, Upstream: e.Upstream, Source: e.Source,
			Arguments: args, Time: time.Now()}
		res, replayed, err := s.rec.fromRecord(e.Served, args)
		start.Replayed = replayed
		if s.opts.OnCall != nil {
			s.opts.OnCall(start)
		}
		if res == nil {
			res, err = s.callTool(ctx, e, args, req)
		}
		s.rec.keep(e.Served, args, res)
		if s.opts.OnResult != nil {
			s.opts.OnResult(CallEnd{CallStart: start, Result: res, Err: err, Duration: time.Since(start.Time)})
		}
		return res, nil
	}
}

// callTool calls entry e's tool with args, bounded by the per-call
// timeout, relaying progress; a failure becomes an error result (and err).
func (s *Server) callTool(ctx context.Context, e Entry, args json.RawMessage, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	cctx, cancel := withTimeout(ctx, s.timeout)
	defer cancel()
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		cctx = WithProgress(cctx, s.relayProgress(ctx, req.Params.Meta.ProgressToken))
	}
	res, err := s.cat.call(cctx, e, args)
	if err != nil {
		if ctx.Err() == nil && cctx.Err() != nil {
			// The bridge's own per-call timeout: say so in its terms.
			err = opErr(ErrTimeout, err, "tool '%s' timed out after %s", e.Served, s.timeout)
		}
		res = mcp.NewToolResultError(err.Error())
	}
	return res, err
}

// relayProgress returns a ProgressFunc that forwards progress to the client
// of the request ctx under its own progress token. Sending never blocks:
// mcp-go drops a notification when the session's queue is full.
func (s *Server) relayProgress(ctx context.Context, token mcp.ProgressToken) ProgressFunc {
	return func(progress, total float64, message string) {
		params := map[string]any{"progressToken": token, "progress": progress}
		if total > 0 {
			params["total"] = total
		}
		if message != "" {
			params["message"] = message
		}
		if err := s.mcp.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params); err != nil {
			s.log.Debug("progress not relayed", "err", err)
		}
	}
}
