package describe

import "github.com/harnessd/harnessd/wire"

// Schemas describe the action, observation and state of a harness
// environment (JSON Schema, draft 2020-12).
var Schemas = func() map[string]any {
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

// addTaskPaths documents GET /tasks and the reset keyword arguments that
// pick a task in the OpenAPI document.
func addTaskPaths(paths map[string]any, simulation bool) {
	intParam := func(name, desc string) map[string]any {
		return map[string]any{"name": name, "in": "query", "required": false, "description": desc,
			"schema": map[string]any{"type": "integer", "minimum": 0}}
	}
	paths["/tasks"] = map[string]any{"get": map[string]any{"summary": "The served taskset, paginated (task_index counts in this order)",
		"parameters": []any{intParam("offset", "first task (default 0)"), intParam("limit", "tasks per page (default 100, at most 1000)")},
		"responses": map[string]any{"200": map[string]any{"description": "OK", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
			"type": "object", "properties": map[string]any{"total": map[string]any{"type": "integer"}, "offset": map[string]any{"type": "integer"},
				"limit": map[string]any{"type": "integer"}, "tasks": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}}}}}},
			"422": map[string]any{"description": "bad offset or limit"}}}}
	if !simulation {
		return
	}
	reset, _ := paths["/reset"].(map[string]any)
	post, _ := reset["post"].(map[string]any)
	body, _ := post["requestBody"].(map[string]any)
	content, _ := body["content"].(map[string]any)
	js, _ := content["application/json"].(map[string]any)
	schema, _ := js["schema"].(map[string]any)
	if props, ok := schema["properties"].(map[string]any); ok {
		props["task_id"] = map[string]any{"type": []string{"string", "null"}, "description": "pick the task with this id"}
		props["task_index"] = map[string]any{"type": []string{"integer", "null"}, "minimum": 0, "description": "pick the task at this position of GET /tasks"}
	}
}

// addTaskSchema adds the task fields of an observation's metadata to its
// JSON Schema.
func addTaskSchema(props map[string]any) {
	props["task_id"] = map[string]any{"type": "string"}
	props["task_instruction"] = map[string]any{"type": "string"}
	props["task_metadata"] = map[string]any{"type": "object"}
	props["grade"] = map[string]any{"type": "object", "properties": map[string]any{
		"reward": map[string]any{"type": []string{"number", "null"}}, "scores": map[string]any{"type": "object"},
		"exit": map[string]any{"type": "object"}, "timed_out": map[string]any{"type": "boolean"},
		"stdout_tail": map[string]any{"type": "string"}, "stderr_tail": map[string]any{"type": "string"},
		"duration_ms": map[string]any{"type": "number"}, "error": map[string]any{"type": "string"}}}
}
