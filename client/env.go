package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/harnessd/harnessd/wire"
)

// Env is one environment session over /ws. Requests are strictly one at a
// time: each sends one frame and reads exactly one reply.
type Env struct {
	cn *conn
	mu sync.Mutex
	// base and opts are what Dial was given, so that a fork's siblings can
	// be attached with the same server and credentials.
	base string
	opts *Options
	// sessionID is the server's session id, when known (an attached Env,
	// or after a fork named the parent).
	sessionID string
}

// Dial connects to a harnessd (or any OpenEnv) server at baseURL
// (http://host:port); the connection is one session.
func Dial(ctx context.Context, baseURL string, opts *Options) (*Env, error) {
	u, err := wsURL(baseURL, "/ws")
	if err != nil {
		return nil, err
	}
	cn, err := dial(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	return &Env{cn: cn, base: baseURL, opts: opts}, nil
}

// envelope is a server frame with its data still encoded.
type envelope = wire.Frame[json.RawMessage]

// request sends {"type":typ,"data":data} and returns the reply's data,
// turning error frames into *ServerError.
func (e *Env) request(ctx context.Context, typ string, data any, want string) (json.RawMessage, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	frame := map[string]any{"type": typ}
	if data != nil {
		frame["data"] = data
	}
	b, err := marshal(frame)
	if err != nil {
		return nil, err
	}
	var reply []byte
	if err := e.cn.write(ctx, b); err != nil {
		// The server may have refused the session (capacity) and closed
		// before our request: report its error frame, not the write error.
		pend, ok := e.cn.pending()
		if !ok {
			return nil, err
		}
		reply = pend
	} else if reply, err = e.cn.next(ctx); err != nil {
		return nil, err
	}
	var env envelope
	if err := json.Unmarshal(reply, &env); err != nil {
		return nil, fmt.Errorf("bad frame from server: %w", err)
	}
	if env.Type == wire.FrameError {
		return nil, decodeServerError(env.Data)
	}
	if env.Type != want {
		return nil, fmt.Errorf("expected a %q frame, got %q", want, env.Type)
	}
	return env.Data, nil
}

func decodeServerError(data json.RawMessage) *ServerError {
	var d map[string]any
	json.Unmarshal(data, &d)
	se := &ServerError{Data: d}
	se.Code, _ = d["code"].(string)
	se.Message, _ = d["message"].(string)
	return se
}

// marshal encodes a request frame without HTML escaping.
func marshal(v any) ([]byte, error) { return wire.MarshalNoEscape(v) }

// ResetOptions start an episode.
type ResetOptions struct {
	EpisodeID string `json:"episode_id,omitempty"`
	Seed      *int64 `json:"seed,omitempty"`
	// TaskID or TaskIndex pick the episode's task of a taskset.
	TaskID    string `json:"task_id,omitempty"`
	TaskIndex *int   `json:"task_index,omitempty"`
}

// Reset starts a new episode. A harness that fails to start gives an
// observation with Done set and Metadata.ErrorType "startup_failed".
func (e *Env) Reset(ctx context.Context, opts ResetOptions) (*wire.Observation, error) {
	data, err := e.request(ctx, "reset", opts, wire.FrameObservation)
	if err != nil {
		return nil, err
	}
	return decodeObservation(data)
}

// Step runs one turn with message.
func (e *Env) Step(ctx context.Context, message string) (*wire.Observation, error) {
	return e.StepAction(ctx, wire.Action{Message: message})
}

// StepAction runs one turn with a full action.
func (e *Env) StepAction(ctx context.Context, a wire.Action) (*wire.Observation, error) {
	data, err := e.request(ctx, "step", a, wire.FrameObservation)
	if err != nil {
		return nil, err
	}
	return decodeObservation(data)
}

func decodeObservation(data json.RawMessage) (*wire.Observation, error) {
	var obs wire.Observation
	if err := json.Unmarshal(data, &obs); err != nil {
		return nil, fmt.Errorf("bad observation: %w", err)
	}
	return &obs, nil
}

// State returns the session's state.
func (e *Env) State(ctx context.Context) (*wire.State, error) {
	data, err := e.request(ctx, "state", nil, wire.FrameState)
	if err != nil {
		return nil, err
	}
	var st wire.State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("bad state: %w", err)
	}
	return &st, nil
}

// MCP sends a JSON-RPC request over the session and returns its result; a
// JSON-RPC error comes back as *RPCError.
func (e *Env) MCP(ctx context.Context, method string, params any) (json.RawMessage, error) {
	req := map[string]any{"jsonrpc": "2.0", "id": 1, "method": method}
	if params != nil {
		req["params"] = params
	}
	data, err := e.request(ctx, "mcp", req, "mcp")
	if err != nil {
		return nil, err
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("bad JSON-RPC response: %w", err)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	return resp.Result, nil
}

// RPCError is a JSON-RPC error answered to an mcp request.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Close ends the session (a close frame, then the socket).
func (e *Env) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5e9)
	defer cancel()
	e.cn.write(ctx, []byte(`{"type":"close"}`))
	return e.cn.close()
}
