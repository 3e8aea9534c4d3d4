package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/harnessd/harnessd/server/internal/bounds"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// sessionHeader names the session an HTTP response belongs to.
const sessionHeader = "X-Harnessd-Session"

// readBody reads a JSON body of at most MaxFrameBytes; empty means {}.
// A larger body is refused before more than the limit is held: at once
// when its Content-Length says so.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (json.RawMessage, bool) {
	b, err := s.readRequestBody(w, r)
	var big *bounds.TooLargeError
	switch {
	case errors.As(err, &big):
		writeJSONStatus(w, http.StatusRequestEntityTooLarge, map[string]any{"detail": "body exceeds the maximum frame size (--max-frame-bytes)"})
		return nil, false
	case err != nil:
		writeJSONStatus(w, http.StatusBadRequest, map[string]any{"detail": "unreadable body: " + err.Error()})
		return nil, false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("{}"), true
	}
	return b, true
}

// readRequestBody reads r's body through http.MaxBytesReader (a body past
// the limit also ends the connection rather than being drained).
func (s *Server) readRequestBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return bounds.ReadCapped(http.MaxBytesReader(w, r.Body, s.opts.MaxFrameBytes), r.ContentLength, s.opts.MaxFrameBytes)
}

func unprocessable(w http.ResponseWriter, e *wireError) {
	detail := any(e.Message)
	if e.Errors != nil {
		detail = e.Errors
	}
	writeJSONStatus(w, http.StatusUnprocessableEntity, map[string]any{"detail": detail})
}

// httpSession finds the session named by id, or the default HTTP session
// (created on first use when create is set).
func (s *Server) httpSession(id string, create bool) (*managed, error) {
	if id != "" {
		if m := s.reg.get(id); m != nil {
			return m, nil
		}
		return nil, errUnknownSession
	}
	s.httpMu.Lock()
	defer s.httpMu.Unlock()
	if m := s.reg.get(s.httpDefault); m != nil {
		return m, nil
	}
	if !create {
		return nil, nil
	}
	m, err := s.create(kindHTTP)
	if err != nil {
		return nil, err
	}
	s.httpDefault = m.id
	return m, nil
}

var errUnknownSession = errors.New("unknown session_id")

func (s *Server) httpError(w http.ResponseWriter, err error) {
	var ce *CapacityError
	switch {
	case errors.Is(err, errUnknownSession):
		writeJSONStatus(w, http.StatusNotFound, map[string]any{"detail": err.Error()})
	case errors.As(err, &ce):
		writeJSONStatus(w, http.StatusServiceUnavailable, map[string]any{"detail": ce.Error(), "active_sessions": ce.Active, "max_sessions": ce.Max})
	case errors.Is(err, errDraining):
		writeJSONStatus(w, http.StatusServiceUnavailable, map[string]any{"detail": err.Error()})
	case isUsageError(err):
		// The client's error, not the environment's: a step with no episode
		// (before a reset, or after the episode ended), or while a turn
		// runs. OpenEnv's reference answers 500 (its stateless HTTP has no
		// episode to step); 409 tells a client to reset first (code
		// EXECUTION_ERROR), or to wait for the running turn (BUSY).
		we := s.execError(err)
		writeJSONStatus(w, http.StatusConflict, map[string]any{"detail": we.Message, "code": we.Code})
	default:
		writeJSONStatus(w, http.StatusInternalServerError, map[string]any{"detail": s.execError(err).Message})
	}
}

// writeObservation answers with an observation's wire form plus the
// session id as one more top-level key, encoded in one pass and trimmed to
// the frame limit like a /ws frame.
func (s *Server) writeObservation(w http.ResponseWriter, obs *wire.Observation, id string) {
	sid := append([]byte(`,"session_id":`), marshal(id)...)
	b, err := bounds.EncodeObservation(nil, obs, nil, nil, s.opts.MaxFrameBytes-int64(len(sid)))
	if err != nil {
		writeJSONStatus(w, http.StatusInternalServerError, map[string]any{"detail": "encoding the observation failed: " + err.Error()})
		return
	}
	b = append(append(b[:len(b)-1], sid...), '}') // reopen the object

	w.Header().Set(sessionHeader, id)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// handleReset: POST /reset {"seed"?, "episode_id"?, "session_id"?, ...}.
// The session persists across requests (unlike OpenEnv's stateless HTTP).
func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	opts, sessionID, werr := parseResetBody(body)
	if werr == nil {
		werr = s.checkTaskChoice(opts)
	}
	if werr != nil {
		unprocessable(w, werr)
		return
	}
	m, err := s.httpSession(sessionID, true)
	if err != nil {
		s.httpError(w, err)
		return
	}
	ctx, replied := session.AfterReply(r.Context()) // background work starts once the reply is out
	defer replied()
	obs, err := s.reset(ctx, m, opts)
	if err != nil {
		s.httpError(w, err)
		return
	}
	s.writeObservation(w, s.present(obs), m.id)
}

// handleStep: POST /step {"action": {...}, "timeout_s"?, "request_id"?, "session_id"?}.
func (s *Server) handleStep(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	a, sessionID, werr := parseStepBody(body)
	if werr != nil {
		unprocessable(w, werr)
		return
	}
	m, err := s.httpSession(sessionID, false)
	if err != nil {
		s.httpError(w, err)
		return
	}
	if m == nil {
		s.httpError(w, session.ErrNoEpisode)
		return
	}
	obs, err := s.step(r.Context(), m, a, nil)
	if err != nil {
		s.httpError(w, err)
		return
	}
	bounded := obs.Metadata.Truncated != nil
	s.writeObservation(w, s.present(obs), m.id)
	if bounded {
		releaseFloodMemory()
	}
}

// handleState: GET /state[?session_id=].
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("session_id")
	if werr := checkSessionID(id, "query", "session_id"); werr != nil {
		unprocessable(w, werr)
		return
	}
	m, err := s.httpSession(id, false)
	if err != nil {
		s.httpError(w, err)
		return
	}
	if m == nil {
		writeJSONStatus(w, http.StatusOK, wire.State{Tools: []string{}})
		return
	}
	w.Header().Set(sessionHeader, m.id)
	writeJSONStatus(w, http.StatusOK, m.sess.State())
}

// present prepares an observation for the wire; production mode keeps the
// harness's stderr, and failure messages that may quote it, to the logs.
func (s *Server) present(obs *wire.Observation) *wire.Observation {
	md := obs.Metadata
	if s.mode != Production || (md.StderrTail == "" && md.ErrorType == "") {
		return obs
	}
	c := *obs
	c.Metadata.StderrTail = ""
	if md.ErrorType != "" {
		msg := "harness failed to start"
		if md.ErrorType != wire.FailureStartupFailed {
			msg = terminalMessage(md.ErrorType, md.Error)
		}
		c.Metadata.Error = msg
		c.Metadata.TurnEvents = make([]wire.Event, len(md.TurnEvents))
		for i, e := range md.TurnEvents {
			if isTerminalError(e) {
				e.Data = &wire.Error{Message: msg}
			}
			c.Metadata.TurnEvents[i] = e
		}
	}
	return &c
}

// handleClose: POST /close {"session_id"?}. It ends the named HTTP session,
// or the default one, stopping its harness and freeing its slot. A session
// held by a socket ends when that socket closes.
func (s *Server) handleClose(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	if _, werr := parseObject(body); werr != nil {
		unprocessable(w, werr)
		return
	}
	var req struct {
		SessionID *string `json:"session_id"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		unprocessable(w, invalid(fieldError{Type: "string_type", Loc: []any{"body", "session_id"}, Msg: "Input should be a valid string", Input: rawInput(body)}))
		return
	}
	id := ""
	if req.SessionID != nil {
		id = *req.SessionID
	}
	m, err := s.httpSession(id, false)
	if err != nil {
		s.httpError(w, err)
		return
	}
	if m == nil {
		writeJSONStatus(w, http.StatusOK, map[string]any{"session_id": nil, "closed": false, "detail": "no default HTTP session is open"})
		return
	}
	if m.attached.Load() {
		m.closing.Store(true)
		writeJSONStatus(w, http.StatusOK, map[string]any{"session_id": m.id, "closed": false, "closing": true,
			"detail": "a socket holds this session; it ends when that socket closes"})
		return
	}
	s.destroy(m, "closed over POST /close")
	writeJSONStatus(w, http.StatusOK, map[string]any{"session_id": m.id, "closed": true})
}
