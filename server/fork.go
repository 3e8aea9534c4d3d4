package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/server/console"
	"github.com/harnessd/harnessd/server/metrics"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// The fork extension (docs/protocol.md, "Forking a live episode"): the /ws
// fork frame and POST /fork fork a session's live episode, between turns,
// into siblings. Each sibling is a session of the server's like any other
// (kind "fork"): it takes a slot of max_sessions, an idle timeout reaps it,
// a /ws connection attaches to it with ?session_id= and the HTTP routes
// name it by session_id. The server keeps which sibling was forked from
// which episode at which turn (registry.forks) for the console. What a fork
// does to the episode, its harness and its doors is the session's
// (session.Session.Fork).

// kindFork is the kind of a sibling's session.
const kindFork = "fork"

// codeBusy answers a fork while a turn (or a reset) runs on the session;
// the turn is unaffected.
const codeBusy = "BUSY"

// maxForkLinks bounds the fork links the server keeps for the console (the
// oldest are dropped).
const maxForkLinks = 4096

// forkRequest is a parsed fork request.
type forkRequest struct {
	count, atTurn int
	mechanism     string
	sessionID     string // POST /fork only
}

// parseFork validates a fork's data: {"count": 1..64, "at_turn"?: int >= 0,
// "mechanism"?: one of wire.ForkMechanisms}, and with http also
// "session_id"; any other key is refused.
func parseFork(data json.RawMessage, http bool) (forkRequest, *wireError) {
	var r forkRequest
	if data == nil {
		return r, invalid(fieldError{Type: "missing", Loc: []any{"count"}, Msg: "Field required: a fork needs count, the number of siblings (1 to 64)", Input: nil})
	}
	raw, werr := parseObject(data)
	if werr != nil {
		return r, werr
	}
	var errs []fieldError
	intField := func(name string, min, max int, dst *int, required bool) {
		v, ok := raw[name]
		if !ok || bytes.Equal(v, []byte("null")) {
			if required {
				errs = append(errs, fieldError{Type: "missing", Loc: []any{name}, Msg: "Field required: a fork needs count, the number of siblings (1 to 64)", Input: rawInput(data)})
			}
			return
		}
		var n json.Number
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		i, err := int64(0), dec.Decode(&n)
		if err == nil && v[0] == '"' {
			err = errors.New("a string") // json.Number takes a quoted number too
		}
		if err == nil {
			i, err = n.Int64()
		}
		switch {
		case err != nil:
			errs = append(errs, fieldError{Type: "int_type", Loc: []any{name}, Msg: "Input should be a valid integer", Input: rawInput(v)})
		case i < int64(min):
			errs = append(errs, fieldError{Type: "greater_than_equal", Loc: []any{name}, Msg: fmt.Sprintf("Input should be greater than or equal to %d", min), Input: i})
		case max > 0 && i > int64(max):
			errs = append(errs, fieldError{Type: "less_than_equal", Loc: []any{name}, Msg: fmt.Sprintf("Input should be less than or equal to %d (the most siblings one fork makes)", max), Input: i})
		default:
			*dst = int(i)
		}
	}
	intField("count", 1, wire.MaxForkCount, &r.count, true)
	intField("at_turn", 0, 0, &r.atTurn, false)
	if v, ok := raw["mechanism"]; ok && !bytes.Equal(v, []byte("null")) {
		if json.Unmarshal(v, &r.mechanism) != nil {
			errs = append(errs, fieldError{Type: "string_type", Loc: []any{"mechanism"}, Msg: "Input should be a valid string", Input: rawInput(v)})
		} else if r.mechanism != "" && !knownMechanism(r.mechanism) {
			errs = append(errs, fieldError{Type: "literal_error", Loc: []any{"mechanism"},
				Msg: "Input should be " + strings.Join(quoted(wire.ForkMechanisms), ", ") + " (or absent: the best the harness allows)", Input: r.mechanism})
		}
	}
	for k, v := range raw {
		switch {
		case k == "count" || k == "at_turn" || k == "mechanism":
		case k == "session_id" && http:
			if json.Unmarshal(v, &r.sessionID) != nil {
				errs = append(errs, fieldError{Type: "string_type", Loc: []any{"session_id"}, Msg: "Input should be a valid string", Input: rawInput(v)})
			} else if werr := checkSessionID(r.sessionID, "session_id"); werr != nil {
				errs = append(errs, werr.Errors...)
			}
		case k == "session_id":
			errs = append(errs, fieldError{Type: "extra_forbidden", Loc: []any{k}, Msg: "a fork frame forks its connection's session: POST /fork names another", Input: rawInput(v)})
		default:
			errs = append(errs, fieldError{Type: "extra_forbidden", Loc: []any{k}, Msg: "Extra inputs are not permitted", Input: rawInput(v)})
		}
	}
	if len(errs) > 0 {
		return r, invalid(errs...)
	}
	return r, nil
}

func knownMechanism(m string) bool {
	for _, k := range wire.ForkMechanisms {
		if m == k {
			return true
		}
	}
	return false
}

func quoted(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = "'" + v + "'"
	}
	return out
}

// errForkBusy is a fork refused because a turn or a reset runs.
var errForkBusy = errors.New("a turn is running on this session: a fork is taken between turns; the turn goes on unaffected")

// forkError is a fork the request asked for wrongly (at_turn past the
// episode's current turn, no episode): answered as a validation error or a
// conflict, never as the environment's failure.
type forkError struct {
	validation bool // a VALIDATION_ERROR (HTTP 422), else a conflict (409)
	field      string
	msg        string
}

func (e *forkError) Error() string { return e.msg }

// fork forks m's live episode (between turns) into req.count siblings and
// registers each: all the slots are reserved first or the fork is refused
// with a CapacityError, never half. It returns the reply; an error is the
// whole fork's (busy, capacity, draining, bad at_turn, the session's).
func (s *Server) fork(ctx context.Context, m *managed, req forkRequest) (*wire.ForkReply, error) {
	t0 := time.Now()
	if s.isDraining() {
		return nil, errDraining
	}
	st := m.sess.State()
	switch {
	case st.EpisodeID == nil:
		return nil, &forkError{msg: "no episode to fork: reset first"}
	case st.TurnRunning || m.sess.Busy():
		s.metrics.ForkNotMade(req.mechanism, metrics.ForkFailed)
		return nil, errForkBusy
	case !st.Active:
		return nil, &forkError{msg: fmt.Sprintf("episode %s has ended: only a live episode forks", *st.EpisodeID)}
	case req.atTurn > st.StepCount:
		return nil, &forkError{validation: true, field: "at_turn",
			msg: fmt.Sprintf("at_turn %d is past episode %s's current turn %d: fork at a turn it has played (0: the current one)", req.atTurn, *st.EpisodeID, st.StepCount)}
	}
	release, err := s.reg.reserveN(req.count)
	if err != nil {
		var ce *CapacityError
		if errors.As(err, &ce) {
			s.metrics.ForkNotMade(req.mechanism, metrics.ForkRefused)
		}
		return nil, err
	}
	defer func() {
		for _, r := range release {
			r() // the slots of siblings that failed (the others' are taken over)
		}
	}()
	m.ops.Add(1)
	defer m.ops.Add(-1)
	m.touch()
	defer m.touch()

	// Each sibling's session is told its observer before it opens its
	// episode: its managed entry is made then, and registered once Fork
	// returns it.
	var mu sync.Mutex
	made := map[string]*managed{}
	observer := func(id string) session.Observer {
		sib := &managed{id: id, kind: kindFork, created: time.Now()}
		mu.Lock()
		made[id] = sib
		mu.Unlock()
		return s.siblingObserver(sib)
	}
	sibs, err := m.sess.Fork(ctx, session.ForkOptions{Count: req.count, AtTurn: req.atTurn, Mechanism: req.mechanism, Observer: observer})
	if err != nil {
		for _, sib := range sibs {
			if sib.Session != nil {
				s.closeUnregistered(sib.Session, "the fork failed")
			}
		}
		for id := range made {
			s.console.Closed(id)
		}
		s.metrics.ForkNotMade(req.mechanism, metrics.ForkFailed)
		switch {
		case errors.Is(err, session.ErrForkBusy) || errors.Is(err, session.ErrBusy):
			return nil, errForkBusy
		case errors.Is(err, session.ErrForkUnavailable), isUsageError(err):
			// The fork asked for cannot be made of this episode (its
			// message says why): the client's to change, shown in any mode.
			return nil, &forkError{msg: err.Error()}
		}
		return nil, fmt.Errorf("fork of session %s: %w", m.id, err)
	}
	reply := &wire.ForkReply{ParentSessionID: m.id, ParentEpisodeID: *st.EpisodeID, AtTurn: req.atTurn, Siblings: make([]wire.ForkSibling, 0, len(sibs))}
	if reply.AtTurn == 0 {
		reply.AtTurn = st.StepCount
	}
	ready := 0
	for _, sib := range sibs {
		ws := wire.ForkSibling{SessionID: sib.SessionID, EpisodeID: sib.EpisodeID, Mechanism: sib.Mechanism}
		if sib.Observation != nil {
			ws.Observation = s.present(sib.Observation) // its reset-like observation, metadata.fork included
		}
		if sib.Session == nil || sib.Err != nil {
			ws.SessionID = ""
			ws.Error = "sibling failed"
			if sib.Err != nil {
				ws.Error = sib.Err.Error()
			}
			if sib.Session != nil {
				s.closeUnregistered(sib.Session, "the sibling failed")
			}
			reply.Siblings = append(reply.Siblings, ws)
			continue
		}
		mu.Lock()
		sm := made[sib.Session.ID()]
		mu.Unlock()
		if sm == nil {
			// Fork did not ask for this sibling's observer.
			sm = &managed{id: sib.Session.ID(), kind: kindFork, created: time.Now()}
		}
		ws.SessionID = sm.id
		if !s.addSibling(m, sm, sib, &release) {
			ws.SessionID, ws.Error = "", "server is shutting down"
			reply.Siblings = append(reply.Siblings, ws)
			continue
		}
		if ready == 0 {
			reply.AtTurn = sm.forkedFrom.AtTurn // the session's word on the turn forked
		}
		ready++
		reply.Siblings = append(reply.Siblings, ws)
	}
	// A sibling that failed after its observer was made leaves nothing in
	// the console.
	for id, sm := range made {
		if !sm.registered.Load() {
			s.console.Closed(id)
		}
	}
	// The metrics count the fork from the session's Forked event.
	s.log.Info("session forked", "session_id", m.id, "episode_id", *st.EpisodeID, "at_turn", reply.AtTurn, "count", req.count,
		"ready", ready, "elapsed", time.Since(t0).String())
	return reply, nil
}

// addSibling registers sibling sib of parent m under sm, taking over one of
// the reserved slots; false when the server started draining (the
// sibling's session is closed then).
func (s *Server) addSibling(parent, sm *managed, sib session.Sibling, release *[]func()) bool {
	pid, pep, at := sib.Session.ForkedFrom()
	if pid == "" {
		pid, pep = parent.id, parent.sess.EpisodeID()
	}
	sm.forkedFrom = &wire.ForkOrigin{ParentSessionID: pid, ParentEpisodeID: pep, AtTurn: at, Mechanism: sib.Mechanism}
	sm.sess = sib.Session
	sm.touch()
	sm.registered.Store(true)
	rel := (*release)[0]
	*release = (*release)[1:]
	if !s.reg.addUnlessDraining(sm, rel) {
		rel()
		s.closeUnregistered(sib.Session, "server shutting down")
		return false
	}
	s.reg.addFork(console.Fork{SessionID: sm.id, EpisodeID: sib.EpisodeID, ParentSessionID: pid, ParentEpisodeID: pep,
		AtTurn: at, Mechanism: sib.Mechanism, Time: sm.created})
	s.metrics.SessionOpened(kindFork)
	s.console.Opened(sm.view())
	s.log.Info("session created", "session_id", sm.id, "kind", kindFork, "forked_from", pid, "at_turn", at,
		"mechanism", sib.Mechanism, "active", s.reg.count(), "max", s.reg.max)
	return true
}

// closeUnregistered closes a sibling's session the server never
// registered.
func (s *Server) closeUnregistered(sess *session.Session, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sess.Close(ctx); err != nil {
		s.log.Warn("closing a fork's sibling", "session_id", sess.ID(), "why", why, "err", err)
	}
}

// siblingObserver is the lifecycle observer of a sibling's session: as
// observerFor, except that the console is shown the sibling without its
// session until the server has registered it (its episode opens inside
// Fork, before).
func (s *Server) siblingObserver(m *managed) session.Observer {
	return func(ev session.Event) {
		s.metrics.Observe(ev)
		v := console.Session{ID: m.id, Kind: m.kind}
		if m.registered.Load() {
			v = m.view()
		}
		s.console.Observe(v, ev)
	}
}

// forkWireError maps a fork's error onto a wire error.
func (s *Server) forkWireError(err error) *wireError {
	var fe *forkError
	switch {
	case errors.Is(err, errForkBusy):
		return &wireError{Message: err.Error(), Code: codeBusy}
	case errors.As(err, &fe) && fe.validation:
		return &wireError{Message: fe.msg, Code: codeValidation, Errors: []fieldError{{Type: "value_error", Loc: []any{fe.field}, Msg: fe.msg, Input: nil}}}
	case errors.As(err, &fe):
		return &wireError{Message: fe.msg, Code: codeExecution}
	}
	return s.execError(err)
}

// handleForkFrame answers a /ws fork frame for the connection's session.
func (s *Server) handleForkFrame(ctx context.Context, wc *wsConn, m *managed, data json.RawMessage) {
	if s.mode != Simulation {
		s.sendError(wc, &wireError{Message: "fork is served in simulation mode only", Code: codeExecution})
		return
	}
	req, werr := parseFork(data, false)
	if werr != nil {
		s.sendError(wc, werr)
		return
	}
	reply, err := s.fork(ctx, m, req)
	if err != nil {
		s.sendError(wc, s.forkWireError(err))
		return
	}
	wc.send(wire.Frame[*wire.ForkReply]{Type: wire.FrameFork, Data: reply})
}

// handleFork: POST /fork {"session_id"?, "count", "at_turn"?, "mechanism"?}.
func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	req, werr := parseFork(body, true)
	if werr != nil {
		unprocessable(w, werr)
		return
	}
	m, err := s.httpSession(req.sessionID, false)
	if err != nil {
		s.httpError(w, err)
		return
	}
	if m == nil {
		writeJSONStatus(w, http.StatusConflict, map[string]any{"detail": "no episode to fork: reset first (or name a session_id)", "code": codeExecution})
		return
	}
	reply, err := s.fork(r.Context(), m, req)
	var fe *forkError
	switch {
	case err == nil:
		w.Header().Set(sessionHeader, m.id)
		writeJSONStatus(w, http.StatusOK, reply)
	case errors.Is(err, errForkBusy):
		writeJSONStatus(w, http.StatusConflict, map[string]any{"detail": err.Error(), "code": codeBusy})
	case errors.As(err, &fe) && fe.validation:
		unprocessable(w, s.forkWireError(err))
	case errors.As(err, &fe):
		writeJSONStatus(w, http.StatusConflict, map[string]any{"detail": fe.msg, "code": codeExecution})
	default:
		s.httpError(w, err)
	}
}

// reserveN claims n slots at once, or none: a fork of G siblings needs G
// free slots. Each returned function releases one slot if its session is
// never added (idempotent).
func (r *registry) reserveN(n int) ([]func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.draining {
		return nil, errDraining
	}
	if active := len(r.sessions) + r.reserved; active+n > r.max {
		return nil, &CapacityError{Active: active, Max: r.max, Idle: r.idleTimeout, Want: n}
	}
	r.reserved += n
	out := make([]func(), n)
	for i := range out {
		var once sync.Once
		out[i] = func() {
			once.Do(func() {
				r.mu.Lock()
				r.reserved--
				r.mu.Unlock()
			})
		}
	}
	return out, nil
}

// addUnlessDraining turns a reservation into a registered session, unless
// the registry drains (Shutdown has listed the sessions it ends).
func (r *registry) addUnlessDraining(m *managed, release func()) bool {
	r.mu.Lock()
	if r.draining {
		r.mu.Unlock()
		return false
	}
	r.sessions[m.id] = m
	r.mu.Unlock()
	release()
	return true
}

// addFork keeps a sibling's link to its parent, dropping the oldest past
// maxForkLinks.
func (r *registry) addFork(f console.Fork) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.forks) >= 2*maxForkLinks {
		r.forks = append([]console.Fork(nil), r.forks[len(r.forks)-maxForkLinks+1:]...)
	}
	r.forks = append(r.forks, f)
}

// forkLinks returns the newest maxForkLinks fork links, oldest first.
func (r *registry) forkLinks() []console.Fork {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.forks[max(0, len(r.forks)-maxForkLinks):]
	return append([]console.Fork(nil), l...)
}

// attachable reports whether a /ws connection may attach to a session of
// kind: one made over /mcp, or a fork's sibling.
func attachable(kind string) bool { return kind == kindMCP || kind == kindFork }

// closeEnds reports whether a close frame on a connection attached by
// attachID ends m: always for a connection that created its session and
// for a fork's sibling (the trainer is done with it), else when an HTTP
// close asked for it. A connection that merely drops leaves an attached
// session for a later attach.
func closeEnds(m *managed, attachID string) bool {
	return attachID == "" || m.closing.Load() || m.kind == kindFork
}
