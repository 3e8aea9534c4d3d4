// Package trainer serves the extensions of harnessd's protocol that only a
// trainer uses (OpenEnv's clients never send them; docs/protocol.md):
// the policy version, daemon-wide or per session, over HTTP
// (POST|GET /policy_version) and as the /ws policy_version frame, and the
// reset keyword arguments that pin an episode's sampling (sampling) or set
// the session's policy version (policy_version).
//
// It owns parsing those requests and answering them; finding sessions is
// the server's (Options.Find), and what a version or a pin does is the
// gateway's. It must not touch a session beyond its policy version.
package trainer

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/wire"
)

// FrameType is the /ws frame of the policy version.
const FrameType = "policy_version"

// Scopes of a policy version.
const (
	ScopeDaemon  = "daemon"  // every session of the daemon
	ScopeSession = "session" // one session, until it or the daemon's is set again
)

// Session is what the trainer's requests need of a session
// (*session.Session).
type Session interface {
	ID() string
	SetPolicyVersion(v int64)
	PolicyVersion() int64
	EpisodeID() string
}

// Options configure the HTTP route.
type Options struct {
	// Daemon is the daemon-wide policy version.
	Daemon *gateway.PolicyVersion
	// Sessions lists the daemon's sessions.
	Sessions func() []Session
}

// find returns the session with id sessionID, or (sessionID "") the one
// whose current or last episode is episodeID.
func (o *Options) find(sessionID, episodeID string) (Session, bool) {
	for _, s := range o.Sessions() {
		if (sessionID != "" && s.ID() == sessionID) || (sessionID == "" && s.EpisodeID() == episodeID) {
			return s, true
		}
	}
	return nil, false
}

// Version is the answer to every policy version request: the version now,
// its scope, and the session's episode for a session's.
type Version struct {
	Version   int64  `json:"version"`
	Scope     string `json:"scope"`
	SessionID string `json:"session_id,omitempty"`
	EpisodeID string `json:"episode_id,omitempty"`
}

// request is a policy version request's body or frame data.
type request struct {
	Version   *int64 `json:"version"`
	Scope     string `json:"scope"`
	SessionID string `json:"session_id"`
	EpisodeID string `json:"episode_id"`
}

// maxBody bounds a request body.
const maxBody = 4096

// parse reads a request; ws says it came as a frame (no session_id or
// episode_id: the connection's session is meant).
func parse(b []byte, ws bool) (request, []wire.FieldError) {
	var r request
	if len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "null" {
		return r, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, []wire.FieldError{{Type: "value_error", Loc: []any{"data"}, Msg: "want {\"version\": integer, \"scope\"?: \"daemon\"|\"session\", " +
			"\"session_id\"?, \"episode_id\"?}: " + err.Error(), Input: string(b)}}
	}
	var errs []wire.FieldError
	if r.Version != nil && *r.Version < 0 {
		errs = append(errs, wire.FieldError{Type: "greater_than_equal", Loc: []any{"version"}, Msg: "Input should be greater than or equal to 0", Input: *r.Version})
	}
	switch r.Scope {
	case "", ScopeDaemon, ScopeSession:
	default:
		errs = append(errs, wire.FieldError{Type: "literal_error", Loc: []any{"scope"}, Msg: "Input should be 'daemon' or 'session'", Input: r.Scope})
	}
	if ws && (r.SessionID != "" || r.EpisodeID != "") {
		errs = append(errs, wire.FieldError{Type: "extra_forbidden", Loc: []any{"session_id"}, Msg: "a frame sets the version of its connection's session (or scope daemon)", Input: r.SessionID + r.EpisodeID})
	}
	if r.SessionID != "" && r.EpisodeID != "" {
		errs = append(errs, wire.FieldError{Type: "value_error", Loc: []any{"episode_id"}, Msg: "give session_id or episode_id, not both", Input: r.EpisodeID})
	}
	if r.Scope == ScopeDaemon && (r.SessionID != "" || r.EpisodeID != "") {
		errs = append(errs, wire.FieldError{Type: "value_error", Loc: []any{"scope"}, Msg: "scope daemon names no session", Input: r.Scope})
	}
	return r, errs
}

// ServeHTTP serves POST /policy_version (set: {"version": N} for the
// daemon, with "session_id" or "episode_id" for one session) and GET
// /policy_version[?session_id=|episode_id=] (read). Unknown sessions get
// 404, bad bodies 422.
func (o *Options) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"detail": "Method Not Allowed"})
		return
	}
	var req request
	var errs []wire.FieldError
	if r.Method == http.MethodGet {
		q := r.URL.Query()
		req.SessionID, req.EpisodeID = q.Get("session_id"), q.Get("episode_id")
		if req.SessionID != "" && req.EpisodeID != "" {
			errs = append(errs, wire.FieldError{Type: "value_error", Loc: []any{"query", "episode_id"}, Msg: "give session_id or episode_id, not both", Input: req.EpisodeID})
		}
	} else {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"detail": "body over 4096 bytes"})
			return
		}
		if req, errs = parse(b, false); len(errs) == 0 && req.Version == nil {
			errs = append(errs, wire.FieldError{Type: "missing", Loc: []any{"body", "version"}, Msg: "Field required", Input: string(b)})
		}
	}
	if len(errs) > 0 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": errs})
		return
	}
	if req.SessionID == "" && req.EpisodeID == "" {
		if req.Version != nil {
			o.Daemon.Set(*req.Version)
		}
		writeJSON(w, http.StatusOK, Version{Version: o.Daemon.Version(), Scope: ScopeDaemon})
		return
	}
	s, ok := o.find(req.SessionID, req.EpisodeID)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "no session holds session_id " + quote(req.SessionID) + " / episode_id " + quote(req.EpisodeID)})
		return
	}
	if req.Version != nil {
		s.SetPolicyVersion(*req.Version)
	}
	writeJSON(w, http.StatusOK, Version{Version: s.PolicyVersion(), Scope: ScopeSession, SessionID: s.ID(), EpisodeID: s.EpisodeID()})
}

// List adapts a server's list of its sessions (list, and sess to get each
// one's Session) to Options.Sessions.
func List[M any](list func() []M, sess func(M) Session) func() []Session {
	return func() []Session {
		ms := list()
		out := make([]Session, 0, len(ms))
		for _, m := range ms {
			out = append(out, sess(m))
		}
		return out
	}
}

// Reply is the reply frame to a /ws policy_version frame (Frame): a
// policy_version frame with the Version, or an error frame of code
// VALIDATION_ERROR listing what is wrong, as OpenEnv's protocol has them.
func Reply(data json.RawMessage, s Session, daemon *gateway.PolicyVersion) any {
	v, errs := Frame(data, s, daemon)
	if errs != nil {
		return wire.Frame[wire.ErrorData]{Type: wire.FrameError, Data: wire.ErrorData{Message: "Invalid message", Code: "VALIDATION_ERROR", Errors: errs}}
	}
	return wire.Frame[*Version]{Type: FrameType, Data: v}
}

// CheckFrame returns what is wrong with a policy_version frame's data
// (nil: nothing), as Frame would refuse it.
func CheckFrame(data json.RawMessage) []wire.FieldError {
	_, errs := parse(data, true)
	return errs
}

// Frame answers a /ws policy_version frame of a connection whose session
// is s: {"version": N} sets the session's version, {"version": N, "scope":
// "daemon"} the daemon's, no version reads it. The answer is the frame's
// reply data, or the validation errors.
func Frame(data json.RawMessage, s Session, daemon *gateway.PolicyVersion) (*Version, []wire.FieldError) {
	req, errs := parse(data, true)
	if len(errs) > 0 {
		return nil, errs
	}
	if req.Scope == ScopeDaemon {
		if req.Version != nil {
			daemon.Set(*req.Version)
		}
		return &Version{Version: daemon.Version(), Scope: ScopeDaemon}, nil
	}
	if req.Version != nil {
		s.SetPolicyVersion(*req.Version)
	}
	return &Version{Version: s.PolicyVersion(), Scope: ScopeSession, EpisodeID: s.EpisodeID()}, nil
}

// ResetKwargs reads the trainer's reset keyword arguments from a reset's
// data: "sampling" (an object of gateway.Sampling's fields, overriding
// harness.model.sampling for the episode) and "policy_version" (an
// integer ≥ 0: the session's version from this reset on) into pin and
// version; absent or null leaves them.
func ResetKwargs(raw map[string]json.RawMessage, pin **gateway.Sampling, version **int64) []wire.FieldError {
	var errs []wire.FieldError
	if v, ok := raw["sampling"]; ok && string(v) != "null" {
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		var s gateway.Sampling
		if err := dec.Decode(&s); err != nil {
			errs = append(errs, wire.FieldError{Type: "model_type", Loc: []any{"sampling"}, Msg: "Input should be an object of temperature, top_p, top_k, " +
				"min_p, seed, max_tokens, allow, strip_stop: " + err.Error(), Input: string(v)})
		} else if err := s.Validate(); err != nil {
			errs = append(errs, wire.FieldError{Type: "value_error", Loc: []any{"sampling"}, Msg: err.Error(), Input: string(v)})
		} else {
			*pin = &s
		}
	}
	if v, ok := raw["policy_version"]; ok && string(v) != "null" {
		var n int64
		switch err := json.Unmarshal(v, &n); {
		case err != nil:
			errs = append(errs, wire.FieldError{Type: "int_type", Loc: []any{"policy_version"}, Msg: "Input should be a valid integer", Input: string(v)})
		case n < 0:
			errs = append(errs, wire.FieldError{Type: "greater_than_equal", Loc: []any{"policy_version"}, Msg: "Input should be greater than or equal to 0", Input: n})
		default:
			*version = &n
		}
	}
	return errs
}

// FullTokenIDsKwarg reads a reset's "full_token_ids" (a boolean: the
// gateway's events of the episode whole instead of deltas from the call
// before) into full; absent or null leaves it.
func FullTokenIDsKwarg(raw map[string]json.RawMessage, full **bool) []wire.FieldError {
	v, ok := raw["full_token_ids"]
	if !ok || string(v) == "null" {
		return nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return []wire.FieldError{{Type: "bool_type", Loc: []any{"full_token_ids"}, Msg: "Input should be a valid boolean", Input: string(v)}}
	}
	*full = &b
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// AtTurnKwarg parses the reset keyword at_turn (an integer of at least 1,
// or null): reset the episode to its own state after that turn.
func AtTurnKwarg(raw map[string]json.RawMessage, at **int) []wire.FieldError {
	v, ok := raw["at_turn"]
	if !ok || string(v) == "null" {
		return nil
	}
	var n int
	if err := json.Unmarshal(v, &n); err != nil {
		return []wire.FieldError{{Type: "int_type", Loc: []any{"at_turn"}, Msg: "Input should be a valid integer", Input: string(v)}}
	}
	if n < 1 {
		return []wire.FieldError{{Type: "greater_than_equal", Loc: []any{"at_turn"}, Msg: "Input should be greater than or equal to 1", Input: n}}
	}
	*at = &n
	return nil
}
