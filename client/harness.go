package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/harnessd/harnessd/wire"
)

// Harness is a streaming /harness connection (production mode): one harness
// session whose turns stream every event.
type Harness struct {
	cn        *conn
	mu        sync.Mutex // one turn at a time
	sessionID string
	name      string
}

// TurnError is a terminal error event: the harness session is over.
type TurnError struct{ Message string }

func (e *TurnError) Error() string { return "harness session ended: " + e.Message }

// ProtocolError is the server's answer to a frame it could not accept.
type ProtocolError struct{ Code, Message string }

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("protocol error %s: %s", e.Code, e.Message)
}

// DialHarness connects to /harness and waits for session_started (the
// harness is running when it returns).
func DialHarness(ctx context.Context, baseURL string, opts *Options) (*Harness, error) {
	u, err := wsURL(baseURL, "/harness")
	if err != nil {
		return nil, err
	}
	cn, err := dial(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	b, err := cn.next(ctx)
	if err != nil {
		cn.close()
		return nil, err
	}
	var env envelope
	json.Unmarshal(b, &env)
	switch env.Type {
	case wire.FrameSessionStarted:
		var d wire.SessionStarted
		json.Unmarshal(env.Data, &d)
		return &Harness{cn: cn, sessionID: d.SessionID, name: d.Harness}, nil
	case wire.FrameError:
		cn.close()
		return nil, decodeServerError(env.Data)
	}
	cn.close()
	return nil, fmt.Errorf("expected session_started, got %q", env.Type)
}

// SessionID is the server's session id.
func (h *Harness) SessionID() string { return h.sessionID }

// Name is the environment's name.
func (h *Harness) Name() string { return h.name }

// Send runs one turn: onEvent (optional) receives each event as it arrives;
// the turn_complete event is returned. A terminal error event returns
// *TurnError (the connection is then over); a protocol_error returns
// *ProtocolError.
func (h *Harness) Send(ctx context.Context, content string, onEvent func(wire.Event)) (*wire.Event, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := marshal(map[string]any{"type": "message", "content": content})
	if err != nil {
		return nil, err
	}
	if err := h.cn.write(ctx, b); err != nil {
		return nil, err
	}
	for {
		frame, err := h.cn.next(ctx)
		if err != nil {
			return nil, err
		}
		var env envelope
		if err := json.Unmarshal(frame, &env); err != nil {
			return nil, fmt.Errorf("bad frame from server: %w", err)
		}
		if env.Type == wire.FrameProtocolError {
			var d struct{ Code, Message string }
			json.Unmarshal(env.Data, &d)
			return nil, &ProtocolError{Code: d.Code, Message: d.Message}
		}
		var ev wire.Event
		if err := json.Unmarshal(frame, &ev); err != nil {
			return nil, fmt.Errorf("bad event from server: %w", err)
		}
		if onEvent != nil {
			onEvent(ev)
		}
		switch {
		case ev.Type == wire.EventTurnComplete:
			return &ev, nil
		case ev.Origin == wire.OriginDaemon:
			// harnessd's own errors end the session; a harness's errors,
			// even unrecoverable ones, are its account of the turn.
			if e, ok := ev.Data.(*wire.Error); ok && !e.Recoverable {
				return nil, &TurnError{Message: e.Message}
			}
		}
	}
}

// Cancel interrupts the running turn (safe to call while Send runs).
func (h *Harness) Cancel(ctx context.Context) error {
	return h.cn.write(ctx, []byte(`{"type":"cancel"}`))
}

// Close ends the session.
func (h *Harness) Close() error { return h.cn.close() }
