package server

import (
	"net/http"

	"github.com/harnessd/harnessd/server/describe"
)

// The OpenAPI document and the /docs page describe the running mode's
// surfaces (package server/describe); OpenEnv's validator reads them.

// description is what the describe package needs to know of s.
func (s *Server) description() describe.Service {
	return describe.Service{Name: s.cfg.Name, Version: s.opts.Version, Mode: string(s.mode), Simulation: s.mode == Simulation, Auth: s.token != ""}
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	writeJSONStatus(w, http.StatusOK, describe.OpenAPI(s.description()))
}

// handleDocs serves a small self-contained page (no scripts, no CDN)
// describing the surfaces of the running mode and linking /openapi.json.
func (s *Server) handleDocs(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(describe.Docs(s.description()))
}
