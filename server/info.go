package server

import (
	"net/http"

	"github.com/harnessd/harnessd/server/describe"
)

func (s *Server) handleMetadata(w http.ResponseWriter, r *http.Request) {
	desc := s.cfg.Description
	if desc == "" {
		desc = s.cfg.Name + " harness environment"
	}
	writeJSONStatus(w, http.StatusOK, map[string]any{
		"name":              s.cfg.Name,
		"description":       desc,
		"readme_content":    nil,
		"version":           s.opts.Version,
		"author":            nil,
		"documentation_url": nil,
		"harness": map[string]any{
			"adapter":      s.cfg.Harness.Adapter,
			"agent":        s.cfg.Harness.Agent,
			"turn_timeout": s.cfg.Episode.TurnTimeout.Seconds(),
			"max_turns":    s.cfg.Episode.MaxTurns,
			"mode":         s.mode,
		},
		"tasks": s.tasksMetadata(),
	})
}

func (s *Server) handleSchema(w http.ResponseWriter, r *http.Request) {
	writeJSONStatus(w, http.StatusOK, describe.Schemas)
}
