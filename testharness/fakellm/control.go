package fakellm

import (
	"net/http"
	"strings"
)

// control serves /_fakellm/: GET requests[?bodies=1], POST reset,
// GET|PUT|POST script, GET health.
func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	switch name := strings.TrimPrefix(r.URL.Path, "/_fakellm/"); {
	case name == "requests" && r.Method == http.MethodGet:
		entries, _ := s.log.snapshot(r.URL.Query().Get("bodies") != "")
		writeJSON(w, http.StatusOK, entries)
	case name == "reset" && r.Method == http.MethodPost:
		s.Reset()
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	case name == "script" && r.Method == http.MethodGet:
		sc := s.Script()
		if sc == nil {
			sc = &Script{Rules: []Rule{}}
		}
		writeJSON(w, http.StatusOK, sc)
	case name == "script" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
		body, status, err := s.readBody(w, r)
		if err != nil {
			writeJSON(w, status, map[string]any{"error": err.Error()})
			return
		}
		sc, err := ParseScript(body)
		if err == nil {
			err = s.SetScript(sc)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "rules": len(sc.Rules)})
	case name == "health" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "fakellm: no control route " + r.Method + " " + r.URL.Path})
	}
}
