package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestOpenEnvValidator reproduces the checks of OpenEnv's
// validate_running_environment (src/openenv/cli/_validation.py of
// huggingface/OpenEnv at revision 386eb4a352eaa2c63654f610be135e975266add8,
// what `openenv validate --url` runs) against `harnessd serve` in both
// modes, with no auth header, as the validator sends none:
//
//   - GET /openapi.json: 200, a JSON object, info.version a string, paths an object
//   - GET /health: 200, JSON status == "healthy"
//   - GET /metadata: 200, string name and description
//   - GET /schema: 200, objects action, observation and state
//   - POST /mcp with {}: HTTP 200 and a JSON object with "jsonrpc": "2.0"
//   - mode consistency: /reset in paths requires /step and /state
//     ("simulation"); without /reset neither may be there ("production")
func TestOpenEnvValidator(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"simulation", "production"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			d := startDaemon(t, spec{Flags: []string{"--mode", mode}, Harness: agentCmd(t)})
			get := func(path string) map[string]any {
				t.Helper()
				code, raw := d.DoRaw("GET", path, "", nil)
				if code != http.StatusOK {
					t.Fatalf("GET %s: HTTP %d %s", path, code, raw)
				}
				var v any
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatalf("GET %s: not JSON: %v", path, err)
				}
				return obj(t, v, path)
			}

			doc := get("/openapi.json")
			info, _ := doc["info"].(map[string]any)
			if _, ok := info["version"].(string); !ok {
				t.Errorf("openapi info.version is not a string: %v", doc["info"])
			}
			paths, ok := doc["paths"].(map[string]any)
			if !ok {
				t.Fatalf("openapi paths is not an object: %T", doc["paths"])
			}
			if h := get("/health"); h["status"] != "healthy" {
				t.Errorf("/health status %v", h["status"])
			}
			md := get("/metadata")
			for _, k := range []string{"name", "description"} {
				if _, ok := md[k].(string); !ok {
					t.Errorf("/metadata %s is not a string: %v", k, md[k])
				}
			}
			sc := get("/schema")
			for _, k := range []string{"action", "observation", "state"} {
				if _, ok := sc[k].(map[string]any); !ok {
					t.Errorf("/schema %s is not an object: %T", k, sc[k])
				}
			}
			code, raw := d.DoRaw("POST", "/mcp", "{}", nil)
			var rpcReply map[string]any
			if code != http.StatusOK || json.Unmarshal(raw, &rpcReply) != nil || rpcReply["jsonrpc"] != "2.0" {
				t.Errorf("POST /mcp {}: HTTP %d %s", code, raw)
			}

			_, reset := paths["/reset"]
			_, step := paths["/step"]
			_, state := paths["/state"]
			got := "production"
			switch {
			case reset && step && state:
				got = "simulation"
			case reset || step || state:
				t.Fatalf("inconsistent paths: /reset %v /step %v /state %v", reset, step, state)
			}
			if got != mode {
				t.Errorf("the validator would infer %s mode from /openapi.json, want %s", got, mode)
			}
			// Every documented path is served in this mode.
			for p := range paths {
				if p == "/ws" || p == "/harness" || p == "/mcp" || p == "/reset" || p == "/step" || p == "/close" {
					continue
				}
				if p == "/fork" {
					// POST only: served, a body without count is refused.
					if code, body := d.DoRaw("POST", p, "{}", nil); code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "count") {
						t.Errorf("documented path POST %s {} answers %d %s", p, code, body)
					}
					continue
				}
				if strings.Contains(p, "{") {
					// A templated path (an episode's export): served, for an
					// unknown episode, with the route's own 404.
					path := strings.ReplaceAll(p, "{episode_id}", "no-such-episode")
					if code, body := d.DoRaw("GET", path, "", nil); code != http.StatusNotFound || !strings.Contains(string(body), "unknown episode") {
						t.Errorf("documented path GET %s answers %d %s", path, code, body)
					}
					continue
				}
				if code, _ := d.DoRaw("GET", p, "", nil); code != http.StatusOK {
					t.Errorf("documented path GET %s answers %d", p, code)
				}
			}
			code, page := d.DoRaw("GET", "/docs", "", nil)
			if code != http.StatusOK || !strings.Contains(string(page), `href="openapi.json"`) || strings.Contains(string(page), "<script") {
				t.Errorf("/docs: HTTP %d %s", code, page)
			}
		})
	}
}
