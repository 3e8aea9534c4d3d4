package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// sessionHeader names the session an HTTP response belongs to.
const sessionHeader = "X-Harnessd-Session"

// readBody reads a JSON body of at most MaxFrameBytes; empty means {}.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (json.RawMessage, bool) {
	b, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxFrameBytes+1))
	if err != nil {
		writeJSONStatus(w, http.StatusBadRequest, map[string]any{"detail": "unreadable body: " + err.Error()})
		return nil, false
	}
	if int64(len(b)) > s.opts.MaxFrameBytes {
		writeJSONStatus(w, http.StatusRequestEntityTooLarge, map[string]any{"detail": "body exceeds the maximum frame size"})
		return nil, false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("{}"), true
	}
	return b, true
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
	default:
		writeJSONStatus(w, http.StatusInternalServerError, map[string]any{"detail": s.execError(err).Message})
	}
}

// writeObservation answers with an observation's wire form plus the
// session id as one more top-level key, encoded in one pass.
func writeObservation(w http.ResponseWriter, obs *wire.Observation, id string) {
	b, err := obs.AppendJSON(make([]byte, 0, 1024))
	if err != nil {
		writeJSONStatus(w, http.StatusInternalServerError, map[string]any{"detail": "encoding the observation failed: " + err.Error()})
		return
	}
	b = append(b[:len(b)-1], `,"session_id":`...) // reopen the object
	b = append(append(b, marshal(id)...), '}')
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
	if werr != nil {
		unprocessable(w, werr)
		return
	}
	m, err := s.httpSession(sessionID, true)
	if err != nil {
		s.httpError(w, err)
		return
	}
	m.touch()
	obs, err := m.sess.Reset(r.Context(), opts)
	if err != nil {
		s.httpError(w, err)
		return
	}
	writeObservation(w, s.present(obs), m.id)
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
		s.httpError(w, harness.ErrNoEpisode)
		return
	}
	m.touch()
	obs, err := m.sess.Step(r.Context(), a, nil)
	m.touch()
	if err != nil {
		s.httpError(w, err)
		return
	}
	m.steps.Add(1)
	writeObservation(w, s.present(obs), m.id)
}

// handleState: GET /state[?session_id=].
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	m, err := s.httpSession(r.URL.Query().Get("session_id"), false)
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
