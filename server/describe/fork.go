package describe

import "github.com/harnessd/harnessd/wire"

// forkRequestSchema and forkReplySchema describe the fork extension's
// request (the /ws fork frame's data, and POST /fork's body with
// session_id) and its answer.
func forkRequestSchema(http bool) map[string]any {
	props := map[string]any{
		"count":     map[string]any{"type": "integer", "minimum": 1, "maximum": wire.MaxForkCount, "description": "how many siblings to make"},
		"at_turn":   map[string]any{"type": "integer", "minimum": 0, "description": "the turn to fork after: 0 (default) the current one, an earlier k from the episode's checkpoints"},
		"mechanism": map[string]any{"type": "string", "enum": wire.ForkMechanisms, "description": "how each sibling's harness state is carried over (default: the best the harness allows: resume, else line, else replay)"},
	}
	if http {
		props["session_id"] = map[string]any{"type": "string", "description": "the session to fork (default: the HTTP default session)"}
	}
	return map[string]any{"type": "object", "properties": props, "required": []string{"count"}, "additionalProperties": false}
}

func forkReplySchema() map[string]any {
	str := map[string]any{"type": "string"}
	sibling := map[string]any{"type": "object",
		"properties": map[string]any{"session_id": str, "episode_id": str, "mechanism": map[string]any{"type": "string", "enum": wire.ForkMechanisms},
			"error":       map[string]any{"type": "string", "description": "why this sibling failed (it has no session then)"},
			"observation": map[string]any{"$ref": "#/components/schemas/Observation"}}}
	return map[string]any{"type": "object", "required": []string{"parent_session_id", "at_turn", "siblings"},
		"properties": map[string]any{"parent_session_id": str, "parent_episode_id": str, "at_turn": map[string]any{"type": "integer"},
			"siblings": map[string]any{"type": "array", "items": sibling}}}
}

// addForkPath documents POST /fork and the schemas of the fork frame.
func addForkPath(paths, schemas map[string]any, answer answerFunc, detail map[string]any) {
	schemas["ForkRequest"] = forkRequestSchema(false)
	schemas["ForkReply"] = forkReplySchema()
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	paths["/fork"] = map[string]any{"post": map[string]any{
		"summary": "Fork a live episode, between turns, into count sibling sessions continuing from its state (docs/protocol.md); the parent goes on unchanged",
		"description": "Each sibling is a session of its own: attach a /ws connection with ?session_id=SIBLING, or name it in session_id of /step, /state, /close. " +
			"Also over /ws: {\"type\":\"fork\",\"data\":ForkRequest} answered {\"type\":\"fork\",\"data\":ForkReply}, or an error frame (code BUSY while a turn runs, " +
			"VALIDATION_ERROR for a bad count, at_turn or mechanism, CAPACITY_REACHED without count free session slots).",
		"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": forkRequestSchema(true)}}},
		"responses": map[string]any{
			"200": answer("the siblings, in order (a sibling that failed has error set)", ref("ForkReply")),
			"404": answer("unknown session_id", detail),
			"409": answer("the session cannot fork now: a turn is running (code BUSY), or it has no live episode", detail),
			"422": answer("invalid request: count not 1 to 64, at_turn past the current turn, an unknown mechanism", detail),
			"503": answer("not enough free session slots for every sibling, or shutting down", detail)}}}
}
