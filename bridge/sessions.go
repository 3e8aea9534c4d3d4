package bridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harnessd/harnessd/internal/doorcap"
)

// DefaultMaxSessions is the MCP sessions a Server keeps at once when
// ServerOptions.MaxSessions is zero: an agent uses one (a one-shot CLI
// one per turn, seldom ending it), and each costs the daemon about 11 KiB.
const DefaultMaxSessions = 64

// ReasonSessions: every one of the Server's MCP sessions is in use, as a
// refused initialize's X-Harnessd-Refused and message say.
const ReasonSessions = "bridge_session_cap"

// bridgeDoor is the bridge's door name, as its refusals and counts say it.
const bridgeDoor = "bridge"

// ErrSessionCap is what a refused initialize's error wraps.
var ErrSessionCap = errors.New("the bridge's MCP sessions are all in use")

// SessionStats counts a Server's MCP sessions.
type SessionStats struct {
	// Live is the sessions kept now.
	Live int
	// Evicted counts sessions ended to make room for a new one (each the
	// least recently used of those with no request in flight); Refused
	// counts initializes refused because every session had one.
	Evicted, Refused uint64
}

// sessions is the Server's table of live MCP sessions: the mcp-go
// SessionIdManager of its stateful streamable HTTP server (Generate,
// Validate, Terminate) and the guard's admission of initializes. It keeps
// at most max sessions. An initialize when the table is full ends the
// least recently used session with no request in flight (a DELETE through
// mcp-go, which drops all its state), so an agent that initializes anew
// on every run and never ends its sessions keeps working; when every
// session has a request in flight the initialize is refused. An ended
// session's ID is forgotten: using it again answers 404, as for any
// unknown ID, and the client initializes again.
type sessions struct {
	max int
	end func(id string) // ends a session in mcp-go; the table's lock is not held
	log *slog.Logger

	mu      sync.Mutex
	live    map[string]*sessionUse
	pending int    // initializes admitted and not yet answered
	clock   uint64 // orders uses: a use's stamp is the clock's next value

	evicted, refused atomic.Uint64
}

// sessionUse is one live session's use: requests in flight, and the stamp
// of the latest start or end of one.
type sessionUse struct {
	busy int
	last uint64
}

var _ server.SessionIdManager = (*sessions)(nil)

func newSessions(max int, end func(string), log *slog.Logger) *sessions {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	doorcap.Expect(bridgeDoor, ReasonSessions)
	return &sessions{max: max, end: end, log: log, live: map[string]*sessionUse{}}
}

// tick returns the clock's next stamp; the lock is held.
func (t *sessions) tick() uint64 { t.clock++; return t.clock }

// Generate makes a live session's ID (an initialize's, admitted by admit).
func (t *sessions) Generate() string {
	id := "mcp-session-" + rand.Text()
	t.mu.Lock()
	t.live[id] = &sessionUse{last: t.tick()}
	t.mu.Unlock()
	return id
}

// Validate accepts the ID of a live session only: one ended (by its
// client, by eviction, by the idle sweep) is as unknown as a made-up one.
func (t *sessions) Validate(id string) (isTerminated bool, err error) {
	t.mu.Lock()
	_, ok := t.live[id]
	t.mu.Unlock()
	if !ok {
		return false, fmt.Errorf("bridge: no live MCP session %q", id)
	}
	return false, nil
}

// Terminate forgets a session (its client's DELETE, an eviction, the idle
// sweep, Close).
func (t *sessions) Terminate(id string) (isNotAllowed bool, err error) {
	t.mu.Lock()
	delete(t.live, id)
	t.mu.Unlock()
	return false, nil
}

// stats returns the table's counts now.
func (t *sessions) stats() SessionStats {
	t.mu.Lock()
	n := len(t.live)
	t.mu.Unlock()
	return SessionStats{Live: n, Evicted: t.evicted.Load(), Refused: t.refused.Load()}
}

// admit makes room for an initialize's session: done must be called once
// it has been answered. When the table is full it ends the least recently
// used idle session; when none is idle it refuses.
func (t *sessions) admit() (done func(), err error) {
	t.mu.Lock()
	for len(t.live)+t.pending >= t.max {
		victim, ok := "", false
		var oldest uint64
		for id, u := range t.live {
			if u.busy == 0 && (!ok || u.last < oldest) {
				victim, oldest, ok = id, u.last, true
			}
		}
		if !ok {
			t.mu.Unlock()
			return nil, t.refuse()
		}
		delete(t.live, victim) // unknown from now on, whatever the cleanup's timing
		t.mu.Unlock()
		if n := t.evicted.Add(1); n&(n-1) == 0 {
			t.log.Debug("bridge ended its least recently used MCP session to start one", "evicted", n, "max_sessions", t.max)
		}
		t.end(victim)
		t.mu.Lock()
	}
	t.pending++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		t.pending--
		t.mu.Unlock()
	}, nil
}

// refuse counts and logs a refused initialize and returns its error.
func (t *sessions) refuse() error {
	err := fmt.Errorf("%w: the bridge keeps at most %d MCP sessions and each has a request in flight (%s); end one (DELETE) or retry once a request ends",
		ErrSessionCap, t.max, ReasonSessions)
	doorcap.CountRefusal(bridgeDoor, ReasonSessions)
	switch n := t.refused.Add(1); {
	case n == 1:
		t.log.Warn("bridge refused an MCP initialize", "reason", ReasonSessions, "max_sessions", t.max)
	case n&(n-1) == 0:
		t.log.Debug("bridge refusing MCP initializes", "reason", ReasonSessions, "refused", n)
	}
	return err
}

// use marks a request of session id in flight, and reports whether the
// session is live: a live one is not evicted until done.
func (t *sessions) use(id string) (done func(), live bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	u, ok := t.live[id]
	if !ok {
		return func() {}, false
	}
	u.busy++
	u.last = t.tick()
	return func() {
		t.mu.Lock()
		u.busy--
		u.last = t.tick()
		t.mu.Unlock()
	}, true
}

// isInitialize reports whether mcp-go will read body as an initialize (and
// make a session for it): its method decodes, as mcp-go decodes it, to
// "initialize". A body holding neither that word nor a \u escape (the only
// way JSON spells a letter otherwise) cannot, and is not decoded.
func isInitialize(body []byte) bool {
	if !bytes.Contains(body, []byte(mcp.MethodInitialize)) && !bytes.Contains(body, []byte(`\u`)) {
		return false
	}
	// The shape mcp-go's handlePost decodes: the same decode succeeds or
	// fails on the same bodies.
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result,omitempty"`
		Error  json.RawMessage `json:"error,omitempty"`
		Method mcp.MCPMethod   `json:"method,omitempty"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == mcp.MethodInitialize
}

// refuseInitialize answers an initialize the session table refused: 503
// with a JSON-RPC error carrying the request's id.
func refuseInitialize(w http.ResponseWriter, body []byte, err error) {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &m)
	id := m.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id,
		"error": map[string]any{"code": mcp.INTERNAL_ERROR, "message": "harnessd: " + err.Error()}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.Header().Set("X-Harnessd-Refused", ReasonSessions)
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write(append(out, '\n'))
}

// endSession ends session id in mcp-go as its client's DELETE would: the
// session manager forgets it and mcp-go drops its per-session state.
func (s *Server) endSession(id string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, EndpointPath, nil)
	if err != nil {
		return
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	s.streamable.ServeHTTP(&discardResponse{h: http.Header{}}, req)
}

// discardResponse is the ResponseWriter of the Server's own DELETEs.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardResponse) WriteHeader(int)             {}

// SessionStats counts the Server's MCP sessions: kept now, evicted to
// make room, initializes refused.
func (s *Server) SessionStats() SessionStats { return s.sessions.stats() }
