package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/internal/jsonscan"
	"github.com/harnessd/harnessd/session"
)

// JSON-RPC error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternal       = -32603
	rpcCapacity       = -32000
)

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// rpcResponse builds a JSON-RPC 2.0 response object.
func rpcResponse(id json.RawMessage, result any, e *rpcError) map[string]any {
	resp := map[string]any{"jsonrpc": "2.0", "id": id}
	if id == nil {
		resp["id"] = nil
	}
	if e != nil {
		resp["error"] = e
	} else {
		resp["result"] = result
	}
	return resp
}

// handleMCP serves OpenEnv's JSON-RPC route (not MCP streamable HTTP):
// always HTTP 200 with a JSON-RPC response.
func (s *Server) handleMCP(w http.ResponseWriter, r *http.Request) {
	body, err := s.readRequestBody(w, r)
	if err != nil {
		writeJSONStatus(w, http.StatusOK, rpcResponse(nil, nil, &rpcError{Code: rpcInvalidRequest, Message: "Invalid request: body too large or unreadable"}))
		return
	}
	writeJSONStatus(w, http.StatusOK, s.mcpRequest(r.Context(), body, nil))
}

// mcpRequest validates and dispatches one JSON-RPC request. bound is the
// /ws connection's session, if the request came over /ws.
func (s *Server) mcpRequest(ctx context.Context, body []byte, bound *managed) map[string]any {
	// The request is decoded a field at a time, each only once its JSON
	// kind is right: the params (a tool's arguments) stay raw JSON, and
	// nothing a client sends becomes Go values in bulk (64 MiB of zeros
	// decoded into them is 2.6 GB).
	var raw map[string]json.RawMessage
	if body == nil || !json.Valid(body) {
		return rpcResponse(nil, nil, &rpcError{Code: rpcParseError, Message: "Parse error"})
	}
	if json.Unmarshal(body, &raw) != nil || raw == nil {
		return rpcResponse(nil, nil, &rpcError{Code: rpcInvalidRequest, Message: "Invalid request: must be a JSON object"})
	}
	id, ok := rpcRequestID(raw["id"])
	if !ok {
		return rpcResponse(nil, nil, &rpcError{Code: rpcInvalidRequest, Message: "Invalid request: id must be a string, an integer or null"})
	}
	if v, ok := jsonscan.StringValue(raw["jsonrpc"]); !ok || v != "2.0" {
		return rpcResponse(id, nil, &rpcError{Code: rpcInvalidRequest, Message: `Invalid request: jsonrpc must be "2.0"`})
	}
	method, ok := jsonscan.StringValue(raw["method"])
	if !ok {
		return rpcResponse(id, nil, &rpcError{Code: rpcInvalidRequest, Message: "Invalid request: method must be a string"})
	}
	for k := range raw {
		switch k {
		case "jsonrpc", "method", "params", "id":
		default:
			return rpcResponse(id, nil, &rpcError{Code: rpcInvalidRequest, Message: "Invalid request: unexpected key " + k})
		}
	}
	params := map[string]json.RawMessage{}
	if p, ok := raw["params"]; ok && !bytes.Equal(p, []byte("null")) {
		if jsonKind(p) != '{' {
			return rpcResponse(id, nil, &rpcError{Code: rpcInvalidParams, Message: "Params must be an object"})
		}
		json.Unmarshal(p, &params)
	}
	result, rerr := s.mcpDispatch(ctx, method, params, bound)
	return rpcResponse(id, result, rerr)
}

// rpcRequestID is a request's id as the response echoes it: a string
// (re-encoded from its decoded value, so that invalid UTF-8 never reaches
// the response: a WebSocket text frame must be UTF-8), an integer as sent,
// or null (absent too). ok is false for any other id.
func rpcRequestID(raw json.RawMessage) (id json.RawMessage, ok bool) {
	switch jsonKind(raw) {
	case 0, 'n':
		return raw, true
	case '"':
		v, ok := jsonscan.StringValue(raw)
		return marshal(v), ok
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var f float64
		if json.Unmarshal(raw, &f) != nil || f != float64(int64(f)) {
			return nil, false
		}
		return raw, true
	}
	return nil, false
}

// jsonKind is the first byte of a JSON value (0 for none): '{', '[', '"',
// 't', 'f', 'n', or the start of a number.
func jsonKind(raw json.RawMessage) byte {
	b := bytes.TrimLeft(raw, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func (s *Server) mcpDispatch(ctx context.Context, method string, params map[string]json.RawMessage, bound *managed) (any, *rpcError) {
	str := func(k string) string {
		var v string
		json.Unmarshal(params[k], &v)
		return v
	}
	// The strings that name things are checked before they are looked up
	// or quoted back; a tool's arguments are the tool's to judge.
	for _, k := range []string{"session_id", "name"} {
		if fe := textFieldError(str(k), maxSessionIDLength, false, k); fe != nil {
			return nil, &rpcError{Code: rpcInvalidParams, Message: "Invalid '" + k + "' in params: " + fe.Msg}
		}
	}
	switch method {
	case "tools/list", "tools/call":
		sess, release, rerr := s.mcpSession(str("session_id"), bound)
		if rerr != nil {
			return nil, rerr
		}
		defer release()
		if method == "tools/list" {
			tools, err := sess.ListTools(ctx)
			if err != nil {
				return nil, s.rpcInternal(err)
			}
			return map[string]any{"tools": tools}, nil
		}
		name := str("name")
		if name == "" {
			return nil, &rpcError{Code: rpcInvalidParams, Message: "Missing 'name' in params"}
		}
		args := params["arguments"]
		if len(args) == 0 || bytes.Equal(args, []byte("null")) {
			args = json.RawMessage("{}")
		}
		res, err := sess.CallTool(ctx, name, args)
		if err != nil {
			if errors.Is(err, bridge.ErrUnknownTool) {
				return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
			}
			return nil, s.rpcInternal(err)
		}
		return res, nil
	case "openenv/session/create":
		m, err := s.create(kindMCP)
		if err != nil {
			return nil, s.rpcSessionError(err)
		}
		return map[string]any{"session_id": m.id}, nil
	case "openenv/session/close":
		id := str("session_id")
		if id == "" {
			return nil, &rpcError{Code: rpcInvalidParams, Message: "Missing 'session_id' in params"}
		}
		m := s.reg.get(id)
		if m == nil {
			return nil, &rpcError{Code: rpcInvalidParams, Message: "Unknown session_id: " + id}
		}
		if m.attached.Load() {
			m.closing.Store(true)
			return map[string]any{"session_id": id, "closed": false, "closing": true}, nil
		}
		s.destroy(m, "closed over /mcp")
		return map[string]any{"session_id": id, "closed": true}, nil
	}
	return nil, &rpcError{Code: rpcMethodNotFound, Message: "Method not found: " + method}
}

// mcpSession picks the session a tools/* request uses: the /ws connection's,
// the one named by session_id, or a throwaway session that starts only the
// tool servers (never a harness). The throwaway session takes a slot of
// max_sessions while the request runs: it starts processes as a session
// does, and requests without a session_id must not start them past the
// capacity (refused with the capacity error, as a session's creation is).
func (s *Server) mcpSession(id string, bound *managed) (*session.Session, func(), *rpcError) {
	switch {
	case bound != nil:
		bound.touch()
		return bound.sess, func() {}, nil
	case id != "":
		m := s.reg.get(id)
		if m == nil {
			return nil, nil, &rpcError{Code: rpcInvalidParams, Message: "Unknown session_id: " + id}
		}
		m.touch()
		return m.sess, func() {}, nil
	}
	release, err := s.reg.reserve()
	if err != nil {
		return nil, nil, s.rpcSessionError(err)
	}
	sess, err := s.newSession("", nil)
	if err != nil {
		release()
		return nil, nil, s.rpcInternal(err)
	}
	return sess, func() {
		defer release()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sess.Close(ctx)
	}, nil
}

// rpcSessionError answers a session that could not be made: the capacity
// error with its numbers, else an internal error.
func (s *Server) rpcSessionError(err error) *rpcError {
	var ce *CapacityError
	if errors.As(err, &ce) {
		return &rpcError{Code: rpcCapacity, Message: ce.Error(), Data: map[string]any{"active_sessions": ce.Active, "max_sessions": ce.Max}}
	}
	return s.rpcInternal(err)
}

func (s *Server) rpcInternal(err error) *rpcError {
	msg := err.Error()
	if s.mode == Production {
		s.log.Warn("mcp request failed", "err", err)
		msg = "internal error"
	}
	return &rpcError{Code: rpcInternal, Message: fmt.Sprint(msg)}
}
