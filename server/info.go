package server

import (
	"net/http"

	"github.com/harnessd/harnessd/wire"
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
	writeJSONStatus(w, http.StatusOK, schemas)
}

// schemas describe the action, observation and state of a harness
// environment (JSON Schema, draft 2020-12).
var schemas = func() map[string]any {
	event := map[string]any{
		"type": "object", "title": "HarnessEvent",
		"properties": map[string]any{
			"type":      map[string]any{"type": "string", "enum": names(wire.EventTypes)},
			"timestamp": map[string]any{"type": "number"},
			"data":      map[string]any{"type": "object"},
			"turn":      map[string]any{"type": "integer"},
			"source":    map[string]any{"type": "string", "enum": names(wire.Origins)},
		},
		"required": []string{"type", "timestamp", "data"},
	}
	metadata := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"episode_id":     map[string]any{"type": "string"},
			"turn_number":    map[string]any{"type": "integer"},
			"response":       map[string]any{"type": "string"},
			"turn_events":    map[string]any{"type": "array", "items": event},
			"harness_done":   map[string]any{"type": "boolean"},
			"cancelled":      map[string]any{"type": "boolean"},
			"injected_tools": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"reward_details": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
			"error_type":     map[string]any{"type": "string", "enum": names(wire.FailureTypes)},
			"error":          map[string]any{"type": "string"},
			"exit":           map[string]any{"type": "object", "properties": map[string]any{"code": map[string]any{"type": "integer"}, "signal": map[string]any{"type": "string"}}},
			"stderr_tail":    map[string]any{"type": "string"},
			"extra":          map[string]any{"type": "object"},
		},
	}
	addTaskSchema(metadata["properties"].(map[string]any))
	observation := map[string]any{
		"type": "object", "title": "HarnessObservation",
		"properties": map[string]any{
			"metadata": metadata,
			"reward":   map[string]any{"type": []string{"number", "null"}},
			"done":     map[string]any{"type": "boolean"},
		},
	}
	return map[string]any{
		"action": map[string]any{
			"type": "object", "title": "HarnessAction", "additionalProperties": false,
			"properties": map[string]any{
				"message":  map[string]any{"type": "string", "description": "the user message of one conversational turn"},
				"metadata": map[string]any{"type": "object"},
			},
			"required": []string{"message"},
		},
		"observation":       observation,
		"reset_observation": observation,
		"state": map[string]any{
			"type": "object", "title": "HarnessState",
			"properties": map[string]any{
				"episode_id":    map[string]any{"type": []string{"string", "null"}},
				"step_count":    map[string]any{"type": "integer"},
				"active":        map[string]any{"type": "boolean"},
				"done":          map[string]any{"type": "boolean"},
				"turn_running":  map[string]any{"type": "boolean"},
				"harness_pid":   map[string]any{"type": "integer"},
				"harness_alive": map[string]any{"type": "boolean"},
				"tools":         map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"last_error":    map[string]any{"type": "object"},
			},
		},
		"harness_frames": map[string]any{
			"client": []string{`{"type":"message","content":str}`, `{"type":"cancel"}`},
			"server": []string{"session_started", "HarnessEvent", "protocol_error", "error"},
		},
	}
}()

// names returns the string values of a list of wire constants.
func names[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
