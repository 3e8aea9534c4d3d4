package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
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
// regular files.
func (s *Server) programsProblem() error {
	h := s.cfg.Harness
	if len(h.Command) > 0 {
		if err := checkProgram(h.Command[0], "", pathOf(h.Env)); err != nil {
			return fmt.Errorf("the harness program cannot be started: %w", err)
		}
	}
	for _, t := range s.cfg.Tools {
		if len(t.Command) == 0 {
			continue
		}
		if err := checkProgram(t.Command[0], t.Dir, pathOf(t.Env)); err != nil {
			return fmt.Errorf("the program of tool server %q cannot be started: %w", t.Name, err)
		}
	}
	return nil
}

// pathOf is the PATH a child gets: its own env's, else the daemon's.
func pathOf(env map[string]string) string {
	if p, ok := env["PATH"]; ok {
		return p
	}
	return os.Getenv("PATH")
}

// checkProgram resolves name (relative to dir when it has a slash, else
// through pathVar) and checks that it is an executable regular file.
func checkProgram(name, dir, pathVar string) error {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		return executable(p)
	}
	var last error = fmt.Errorf("%s is not in PATH (%s)", name, pathVar)
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		err := executable(filepath.Join(d, name))
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			last = err
		}
	}
	return last
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s does not exist: %w", p, fs.ErrNotExist)
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", p)
	}
	if err := unix.Access(p, unix.X_OK); err != nil {
		return fmt.Errorf("%s: not executable: %w", p, err)
	}
	return nil
}
