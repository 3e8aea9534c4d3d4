package server

import (
	"fmt"
	"net/http"

	"github.com/harnessd/harnessd/config"
)

// handleHealth is the liveness probe: 200 {"status":"healthy"} whenever the
// process can serve (OpenEnv's validator requires exactly that), during a
// drain too — a failing liveness probe asks the orchestrator to restart
// the container, which a drain must not provoke. Whether the daemon should
// get new work is readiness (/ready).
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSONStatus(w, http.StatusOK, map[string]any{
		"status":          "healthy",
		"draining":        s.isDraining(),
		"active_sessions": s.reg.count(),
		"max_sessions":    s.opts.MaxSessions,
		"mode":            s.mode,
		"version":         s.opts.Version,
		"isolation":       s.isolationLevel(),
	})
}

// handleReady is the readiness probe: 200 {"status":"ready"} when the daemon
// can start a harness, else 503 {"status":"not_ready","reason":...} — while
// draining, and when a program of the environment (the harness, a tool
// server) no longer resolves to an executable file. Only cheap checks run
// (a PATH lookup and a stat per program); a full session at capacity is
// still ready, since a pod that holds its trainer's session must stay
// published.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	body := map[string]any{"active_sessions": s.reg.count(), "max_sessions": s.opts.MaxSessions}
	reason := ""
	if s.isDraining() {
		reason = "draining: the server is shutting down"
	} else if err := s.programsProblem(); err != nil {
		reason = err.Error()
	}
	if reason != "" {
		body["status"], body["reason"] = "not_ready", reason
		writeJSONStatus(w, http.StatusServiceUnavailable, body)
		return
	}
	body["status"] = "ready"
	writeJSONStatus(w, http.StatusOK, body)
}

// programsProblem checks that the harness program and every tool server's
// program resolve, as each child's PATH would resolve them, to executable
// regular files (config.CheckProgram, as validate checks them).
func (s *Server) programsProblem() error {
	h := s.cfg.Harness
	if len(h.Command) > 0 {
		if cause := config.CheckProgram(h.Command[0], h.Env, ""); cause != "" {
			return fmt.Errorf("the harness program cannot be started: %s", cause)
		}
	}
	for _, t := range s.cfg.Tools {
		if len(t.Command) == 0 {
			continue
		}
		if cause := config.CheckProgram(t.Command[0], t.Env, t.Dir); cause != "" {
			return fmt.Errorf("the program of tool server %q cannot be started: %s", t.Name, cause)
		}
	}
	return nil
}
