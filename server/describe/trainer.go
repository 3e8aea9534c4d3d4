package describe

// Schema builders of OpenAPI, as OpenAPI's body defines them.
type (
	objFunc    = func(props map[string]any, required ...string) map[string]any
	answerFunc = func(desc string, schema map[string]any) map[string]any
)

// addTrainerPaths adds the extensions only a trainer uses (simulation
// mode): the training export of an episode and the policy version (the
// fork route is fork.go's).
func addTrainerPaths(paths map[string]any, obj objFunc, answer answerFunc, detail map[string]any) {
	str := map[string]any{"type": "string"}
	integer := map[string]any{"type": "integer", "minimum": 0}
	list := map[string]any{"type": "array", "items": map[string]any{"type": "object"}}
	export := obj(map[string]any{"format": map[string]any{"const": "harnessd.gateway.export/v1"}, "episode_id": str,
		"traffic": str, "policy_version": integer, "pinned_sampling": map[string]any{"type": "object"},
		"calls": list, "chains": list, "rewards": list, "issues": list}, "format", "episode_id", "calls", "chains", "rewards", "issues")
	paths["/episodes/{episode_id}/export"] = map[string]any{"get": map[string]any{
		"summary":     "The training export of an episode (format harnessd.gateway.export/v1, docs/gateway.md): calls with their policy versions and sampling, chains of token ids, loss masks, logprobs, rewards",
		"description": "Also over /ws: {\"type\":\"export\",\"data\":{\"episode_id\"?}} answered {\"type\":\"export\",\"data\":EXPORT}.",
		"parameters":  []any{map[string]any{"name": "episode_id", "in": "path", "required": true, "schema": str}},
		"responses": map[string]any{"200": answer("the export", export),
			"404": answer("no session holds the episode and record_dir has no record of it", detail),
			"409": answer("the episode has no training traffic: reason no_model_gateway, evaluation_traffic or no_training_calls",
				obj(map[string]any{"detail": str, "reason": str, "calls": map[string]any{"type": "array"}, "issues": map[string]any{"type": "array"}})),
			"422": answer("a malformed episode_id", detail)}}}
	version := obj(map[string]any{"version": integer, "scope": map[string]any{"enum": []string{"daemon", "session"}},
		"session_id": str, "episode_id": str}, "version", "scope")
	sessionParams := []any{
		map[string]any{"name": "session_id", "in": "query", "required": false, "schema": str, "description": "a session's version (default: the daemon's)"},
		map[string]any{"name": "episode_id", "in": "query", "required": false, "schema": str, "description": "the version of the session whose current or last episode this is"},
	}
	paths["/policy_version"] = map[string]any{
		"get": map[string]any{"summary": "The policy version: the daemon's, or a session's effective one",
			"parameters": sessionParams,
			"responses":  map[string]any{"200": answer("the version", version), "404": answer("no such session", detail), "422": answer("invalid request", detail)}},
		"post": map[string]any{"summary": "Set the policy version the engine serves: daemon-wide, or one session's (by session_id or episode_id) until it or the daemon's is set again; every model call records the version it was sent and answered under",
			"description": "Also over /ws: {\"type\":\"policy_version\",\"data\":{\"version\":N,\"scope\"?:\"session\"|\"daemon\"}}.",
			"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": obj(map[string]any{
				"version": integer, "session_id": str, "episode_id": str}, "version")}}},
			"responses": map[string]any{"200": answer("the version set", version), "404": answer("no such session", detail), "422": answer("invalid request", detail)}},
	}
	if reset, ok := paths["/reset"].(map[string]any); ok {
		post, _ := reset["post"].(map[string]any)
		body, _ := post["requestBody"].(map[string]any)
		content, _ := body["content"].(map[string]any)
		js, _ := content["application/json"].(map[string]any)
		schema, _ := js["schema"].(map[string]any)
		if props, ok := schema["properties"].(map[string]any); ok {
			props["sampling"] = map[string]any{"type": []string{"object", "null"}, "description": "override harness.model.sampling for this episode: " +
				"temperature, top_p, top_k, min_p, seed, max_tokens, allow, strip_stop (docs/gateway.md)"}
			props["policy_version"] = map[string]any{"type": []string{"integer", "null"}, "minimum": 0, "description": "set the session's policy version from this reset on"}
			props["full_token_ids"] = map[string]any{"type": []string{"boolean", "null"}, "description": "the gateway's llm_request and llm_response events whole " +
				"instead of deltas from the call before (default episode.full_token_ids; docs/protocol.md, calls as deltas)"}
		}
	}
}
