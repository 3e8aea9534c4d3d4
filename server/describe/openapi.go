package describe

import (
	"fmt"
	"html"
	"strings"

	"github.com/harnessd/harnessd/session"
)

// Service is what the documents describe: the running server.
type Service struct {
	Name, Version, Mode string
	// Simulation says the orchestration surfaces (reset, step, state) are
	// served; production serves /harness instead.
	Simulation bool
	// Auth says an API token guards every surface but the probes.
	Auth bool
}

// OpenAPI returns the OpenAPI 3.1 document of s's surfaces.
func OpenAPI(s Service) map[string]any {
	obj := func(props map[string]any, required ...string) map[string]any {
		o := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			o["required"] = required
		}
		return o
	}
	str := map[string]any{"type": "string"}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	jsonBody := func(schema map[string]any) map[string]any {
		return map[string]any{"required": false, "content": map[string]any{"application/json": map[string]any{"schema": schema}}}
	}
	answer := func(desc string, schema map[string]any) map[string]any {
		a := map[string]any{"description": desc}
		if schema != nil {
			a["content"] = map[string]any{"application/json": map[string]any{"schema": schema}}
		}
		return a
	}
	detail := obj(map[string]any{"detail": map[string]any{}})
	probe := func(summary string) map[string]any {
		return map[string]any{"get": map[string]any{"summary": summary, "security": []any{},
			"responses": map[string]any{"200": answer("OK", map[string]any{"type": "object"}), "503": answer("not ready", map[string]any{"type": "object"})}}}
	}
	get := func(summary string, schema map[string]any) map[string]any {
		return map[string]any{"get": map[string]any{"summary": summary, "responses": map[string]any{"200": answer("OK", schema)}}}
	}
	wsPath := func(summary string) map[string]any {
		return map[string]any{"get": map[string]any{"summary": summary, "description": "WebSocket upgrade (RFC 6455); see /docs for the frames.",
			"responses": map[string]any{"101": answer("switching protocols", nil)}}}
	}
	paths := map[string]any{
		"/health":       probe("Liveness: 200 {\"status\":\"healthy\"} while the process can serve (no token needed)"),
		"/ready":        probe("Readiness: 200 when a harness can be started, 503 with a reason while draining or when a program is missing (no token needed)"),
		"/metadata":     get("Environment metadata (name, description, version, harness)", ref("Metadata")),
		"/schema":       get("JSON Schemas of the action, observation and state", map[string]any{"type": "object"}),
		"/metrics":      map[string]any{"get": map[string]any{"summary": "Prometheus metrics (text exposition format)", "responses": map[string]any{"200": map[string]any{"description": "OK", "content": map[string]any{"text/plain": map[string]any{"schema": str}}}}}},
		"/openapi.json": get("This document", map[string]any{"type": "object"}),
		"/docs":         map[string]any{"get": map[string]any{"summary": "A page describing the surfaces", "responses": map[string]any{"200": map[string]any{"description": "OK", "content": map[string]any{"text/html": map[string]any{"schema": str}}}}}},
		"/ws":           wsPath("OpenEnv's generic WebSocket protocol: reset, step, state, close and mcp frames; harnessd's extensions export, policy_version and fork (docs/protocol.md); ?session_id= attaches to a fork's sibling or an /mcp session"),
		"/mcp": map[string]any{"post": map[string]any{"summary": "JSON-RPC 2.0: tools/list, tools/call, openenv/session/create, openenv/session/close",
			"requestBody": jsonBody(map[string]any{"type": "object"}),
			"responses":   map[string]any{"200": answer("a JSON-RPC response (errors included)", map[string]any{"type": "object"})}}},
	}
	if s.Simulation {
		sid := map[string]any{"type": "string", "description": "the session to use (default: the HTTP default session)"}
		paths["/reset"] = map[string]any{"post": map[string]any{"summary": "Start an episode (stateful: the session persists across requests)",
			"requestBody": jsonBody(obj(map[string]any{"seed": map[string]any{"type": []string{"integer", "null"}, "minimum": 0},
				"episode_id": map[string]any{"type": []string{"string", "null"}, "maxLength": session.MaxEpisodeIDLength}, "session_id": sid})),
			"responses": map[string]any{"200": answer("the reset observation, with session_id", ref("Observation")),
				"422": answer("invalid request", detail), "503": answer("at capacity or shutting down", detail)}}}
		paths["/step"] = map[string]any{"post": map[string]any{"summary": "Run one conversational turn",
			"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": obj(map[string]any{
				"action": ref("Action"), "timeout_s": map[string]any{"type": "number", "exclusiveMinimum": 0},
				"request_id": str, "session_id": sid}, "action")}}},
			"responses": map[string]any{"200": answer("the turn's observation, with session_id", ref("Observation")),
				"404": answer("unknown session_id", detail), "422": answer("invalid request", detail)}}}
		paths["/state"] = map[string]any{"get": map[string]any{"summary": "The episode's state",
			"parameters": []any{map[string]any{"name": "session_id", "in": "query", "required": false, "schema": str}},
			"responses":  map[string]any{"200": answer("OK", ref("State")), "404": answer("unknown session_id", detail)}}}
		paths["/close"] = map[string]any{"post": map[string]any{"summary": "End an HTTP session and free its slot",
			"requestBody": jsonBody(obj(map[string]any{"session_id": sid})),
			"responses": map[string]any{"200": answer("closed (or closing, when a socket holds it)", map[string]any{"type": "object"}),
				"404": answer("unknown session_id", detail)}}}
		addTrainerPaths(paths, obj, answer, detail)
	} else {
		paths["/harness"] = wsPath("Streaming harness sessions: session_started, then every event of each turn")
	}
	addTaskPaths(paths, s.Simulation)
	schemas := map[string]any{
		"Action":      Schemas["action"],
		"Observation": Schemas["observation"],
		"State":       Schemas["state"],
		"Metadata": obj(map[string]any{"name": str, "description": str, "version": str,
			"harness": map[string]any{"type": "object"}}, "name", "description"),
	}
	if s.Simulation {
		addForkPath(paths, schemas, answer, detail)
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       s.Name + " (harnessd)",
			"version":     s.Version,
			"description": fmt.Sprintf("harnessd serving the %s environment in %s mode.", s.Name, s.Mode),
		},
		"paths":      paths,
		"components": map[string]any{"schemas": schemas},
	}
	if s.Auth {
		doc["components"].(map[string]any)["securitySchemes"] = map[string]any{
			"bearer": map[string]any{"type": "http", "scheme": "bearer"},
			"basic":  map[string]any{"type": "http", "scheme": "basic", "description": "any user name; the password is the API token"},
			"query":  map[string]any{"type": "apiKey", "in": "query", "name": "token"},
		}
		doc["security"] = []any{map[string]any{"bearer": []any{}}, map[string]any{"basic": []any{}}, map[string]any{"query": []any{}}}
	}
	return doc
}

// Docs returns a small self-contained page (no scripts, no CDN) describing
// s's surfaces and linking /openapi.json.
func Docs(s Service) []byte {
	e := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s — harnessd</title>\n", e(s.Name))
	b.WriteString("<style>body{font:15px/1.5 system-ui,sans-serif;max-width:52em;margin:2em auto;padding:0 1em}code{background:#f3f3f3;padding:0 .2em}td{padding:.2em .8em;vertical-align:top}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>harnessd %s, <strong>%s</strong> mode. The machine-readable description is <a href=\"openapi.json\">/openapi.json</a> (OpenAPI 3.1).</p>\n",
		e(s.Name), e(s.Version), e(s.Mode))
	rows := [][2]string{
		{"GET /health", "liveness: 200 <code>{\"status\":\"healthy\"}</code> while the process can serve; no token"},
		{"GET /ready", "readiness: 200 when a harness can be started, 503 with a <code>reason</code> while draining or when a program is missing; no token"},
		{"WS /ws", "OpenEnv's generic protocol: <code>reset</code>, <code>step</code> (<code>{\"message\": ...}</code>), <code>state</code>, <code>close</code>, <code>mcp</code> frames, one reply each"},
	}
	if s.Simulation {
		rows = append(rows,
			[2]string{"POST /reset, POST /step, GET /state", "the same over HTTP, stateful: the answer carries <code>session_id</code>; pass it back (default: one HTTP session)"},
			[2]string{"POST /close", "end an HTTP session (<code>{\"session_id\": ...}</code>, or the default one) and free its slot"},
			[2]string{"GET /episodes/{episode_id}/export", "an episode's training export (token ids, loss masks, logprobs, rewards, policy versions and sampling per call); over /ws the <code>export</code> frame"},
			[2]string{"POST /fork", "fork a live episode between turns into <code>count</code> sibling sessions (<code>{\"session_id\",\"count\",\"at_turn\"?,\"mechanism\"?}</code>); each sibling is attached by <code>/ws?session_id=</code> or named in HTTP routes; over /ws the <code>fork</code> frame"},
			[2]string{"POST, GET /policy_version", "set or read the policy version (<code>{\"version\": N}</code>, daemon-wide, or with <code>session_id</code> or <code>episode_id</code>); over /ws the <code>policy_version</code> frame"})
	} else {
		rows = append(rows, [2]string{"WS /harness", "streaming sessions: <code>session_started</code>, then each turn's events up to <code>turn_complete</code>; <code>{\"type\":\"cancel\"}</code> interrupts"})
	}
	rows = append(rows,
		[2]string{"POST /mcp", "JSON-RPC 2.0: <code>tools/list</code>, <code>tools/call</code>, <code>openenv/session/create</code>, <code>openenv/session/close</code>"},
		[2]string{"GET /metadata, GET /schema", "the environment's metadata and the JSON Schemas of action, observation and state"},
		[2]string{"GET /metrics", "Prometheus metrics (text format)"})
	b.WriteString("<table>\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "<tr><td><code>%s</code></td><td>%s</td></tr>\n", e(r[0]), r[1])
	}
	b.WriteString("</table>\n")
	if s.Auth {
		b.WriteString("<p>Every surface but the probes needs the API token: <code>Authorization: Bearer TOKEN</code>, HTTP Basic with the token as password (e.g. <code>http://harnessd:TOKEN@host:8000</code> as OpenEnv's client base URL), or <code>?token=TOKEN</code>.</p>\n")
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}
