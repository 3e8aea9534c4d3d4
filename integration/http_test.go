package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHTTPStateful: POST /reset, POST /step and GET /state share one
// session (unlike OpenEnv's per-request environments, §17.1), with the same
// shapes as /ws, 422 for invalid input and timeout_s per step.
func TestHTTPStateful(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Harness: agentCmd(t)})

	code, v := d.Do("GET", "/state", "", nil)
	st := obj(t, v, "state")
	if code != 200 || st["episode_id"] != nil || st["step_count"] != 0.0 {
		t.Fatalf("GET /state before reset: %d %v", code, v)
	}
	code, v = d.Do("POST", "/step", `{"action":{"message":"hi"}}`, nil)
	if code != 409 || !strings.Contains(fmt.Sprint(v), "reset") {
		t.Fatalf("POST /step before reset: %d %v, want 409", code, v)
	}

	code, v = d.Do("POST", "/reset", "", nil) // an empty body is {}
	if code != 200 {
		t.Fatalf("POST /reset: %d %v", code, v)
	}
	obs := checkObservation(t, v)
	sid, _ := obs["session_id"].(string)
	epID, _ := meta(t, obs)["episode_id"].(string)
	if sid == "" || epID == "" {
		t.Fatalf("reset: no session or episode id: %v", obs)
	}
	_, v = d.Do("GET", "/state", "", nil)
	st = obj(t, v, "state")
	if st["episode_id"] != epID || st["step_count"] != 0.0 {
		t.Fatalf("GET /state after reset: %v", st)
	}
	h1 := mustProc(t, int(st["harness_pid"].(float64)))

	code, v = d.Do("POST", "/step", `{"action":{"message":"reply one"},"request_id":"r1"}`, nil)
	if code != 200 || responseOf(t, checkObservation(t, v)) != "one" {
		t.Fatalf("POST /step: %d %v", code, v)
	}
	code, v = d.Do("POST", "/step", `{"action":{"message":"history"},"session_id":"`+sid+`"}`, nil)
	if code != 200 || responseOf(t, checkObservation(t, v)) != "history: reply one | history" {
		t.Fatalf("POST /step with session_id: %d %v", code, v)
	}
	_, v = d.Do("GET", "/state?session_id="+sid, "", nil)
	if st = obj(t, v, "state"); st["step_count"] != 2.0 || st["episode_id"] != epID {
		t.Fatalf("GET /state after two steps: %v", st)
	}

	for _, body := range []string{
		`{}`, `{"action":{}}`, `{"action":{"message":"x","bogus":1}}`, `{"action":{"message":3}}`, `{"action":[]}`,
		`{"action":{"message":"x"},"timeout_s":0}`, `{"action":{"message":"x"},"timeout_s":-1}`,
		`{"action":{"message":"x"},"timeout_s":"soon"}`, `[]`,
	} {
		code, v := d.Do("POST", "/step", body, nil)
		if code != 422 {
			t.Errorf("POST /step %s: HTTP %d %v, want 422", body, code, v)
			continue
		}
		if _, ok := obj(t, v, "422 body")["detail"]; !ok {
			t.Errorf("POST /step %s: 422 without detail: %v", body, v)
		}
	}
	for _, body := range []string{`{"seed":-1}`, `{"seed":"x"}`, `{"episode_id":5}`, `not json`} {
		if code, v := d.Do("POST", "/reset", body, nil); code != 422 {
			t.Errorf("POST /reset %s: HTTP %d %v, want 422", body, code, v)
		}
	}
	code, _ = d.Do("POST", "/step", `{"action":{"message":"x"},"session_id":"no-such-session"}`, nil)
	if code != 404 {
		t.Errorf("POST /step for an unknown session: HTTP %d, want 404", code)
	}
	// Invalid requests never reached the harness.
	_, v = d.Do("POST", "/step", `{"action":{"message":"count"}}`, nil)
	if got := responseOf(t, checkObservation(t, v)); got != "turns: 3" {
		t.Fatalf("after invalid requests: %q", got)
	}

	// timeout_s bounds one step: a terminal turn_timeout observation.
	code, v = d.Do("POST", "/step", `{"action":{"message":"sleep 30s"},"timeout_s":0.3}`, nil)
	obs = checkObservation(t, v)
	md := meta(t, obs)
	if code != 200 || obs["done"] != true || md["error_type"] != "turn_timeout" || md["error"] != "harness turn exceeded 0.3 seconds" {
		t.Fatalf("step with timeout_s: %d %v", code, v)
	}
	waitGone(t, h1)
	code, v = d.Do("POST", "/step", `{"action":{"message":"x"}}`, nil)
	if code != 409 {
		t.Fatalf("step after a terminal observation: %d %v, want 409", code, v)
	}

	// A new episode on the same session.
	code, v = d.Do("POST", "/reset", `{"episode_id":"http-2","extra_kwarg":1}`, nil)
	if code != 200 || meta(t, checkObservation(t, v))["episode_id"] != "http-2" || obj(t, v, "obs")["session_id"] != sid {
		t.Fatalf("second reset: %d %v", code, v)
	}
	_, v = d.Do("POST", "/step", `{"action":{"message":"count"}}`, nil)
	if got := responseOf(t, checkObservation(t, v)); got != "turns: 1" {
		t.Fatalf("second episode: %q", got)
	}
}

// TestMetadataSchemaHealth checks the shapes of GET /health, /metadata and
// /schema (§2).
func TestMetadataSchemaHealth(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--name", "shapes", "--max-sessions", "3"}, Harness: agentCmd(t)})

	h := d.Health()
	if h["status"] != "healthy" || h["active_sessions"] != 0.0 || h["max_sessions"] != 3.0 || h["mode"] != "simulation" {
		t.Fatalf("/health: %v", h)
	}

	code, v := d.Do("GET", "/metadata", "", nil)
	m := obj(t, v, "metadata")
	if code != 200 || m["name"] != "shapes" {
		t.Fatalf("/metadata: %d %v", code, v)
	}
	for k, kind := range map[string]string{"name": "string", "description": "string", "readme_content": "string|null",
		"version": "string|null", "author": "string|null", "documentation_url": "string|null"} {
		val, ok := m[k]
		if !ok {
			t.Errorf("/metadata lacks %q", k)
			continue
		}
		_, isStr := val.(string)
		if !isStr && !(strings.HasSuffix(kind, "null") && val == nil) {
			t.Errorf("/metadata %q = %v, want %s", k, val, kind)
		}
	}

	code, v = d.Do("GET", "/schema", "", nil)
	s := obj(t, v, "schema")
	if code != 200 {
		t.Fatalf("/schema: %d", code)
	}
	for _, k := range []string{"action", "observation", "state", "reset_observation"} {
		obj(t, s[k], "schema "+k)
	}
	action := obj(t, s["action"], "action schema")
	props := obj(t, action["properties"], "action properties")
	if obj(t, props["message"], "message")["type"] != "string" || obj(t, props["metadata"], "metadata")["type"] != "object" {
		t.Fatalf("action schema properties: %v", props)
	}
	if fmt.Sprint(action["required"]) != "[message]" {
		t.Fatalf("action schema required: %v", action["required"])
	}
}

// rpc posts a JSON-RPC body to /mcp: always HTTP 200, and exactly one of
// result and error.
func rpc(t *testing.T, d *daemon, body string) map[string]any {
	t.Helper()
	code, v := d.Do("POST", "/mcp", body, nil)
	r := obj(t, v, "JSON-RPC response")
	_, hasRes := r["result"]
	_, hasErr := r["error"]
	if code != 200 || r["jsonrpc"] != "2.0" || hasRes == hasErr {
		t.Fatalf("POST /mcp %s: HTTP %d %v", body, code, v)
	}
	return r
}

func rpcCode(t *testing.T, r map[string]any) float64 {
	t.Helper()
	e, ok := r["error"].(map[string]any)
	if !ok {
		return 0
	}
	return e["code"].(float64)
}

// TestMCPJSONRPC covers OpenEnv's JSON-RPC route (§2.1): tools, error
// codes, session create/close, and /ws?session_id= attachment (§3.4).
func TestMCPJSONRPC(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{toolsFlag(t), "--max-sessions", "2"}, Harness: agentCmd(t)})

	r := rpc(t, d, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	tools := obj(t, r["result"], "result")["tools"].([]any)
	for _, tl := range tools {
		tool := obj(t, tl, "tool")
		if _, ok := tool["name"].(string); !ok || tool["inputSchema"] == nil {
			t.Fatalf("tool shape: %v", tool)
		}
	}
	if len(tools) < 5 || r["id"] != 1.0 {
		t.Fatalf("tools/list: %v", r)
	}
	r = rpc(t, d, `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi there"}}}`)
	if b, _ := json.Marshal(r["result"]); !strings.Contains(string(b), "hi there") || r["id"] != "x" {
		t.Fatalf("tools/call echo: %v", r)
	}
	// The throwaway sessions of those calls left no tool server running.
	d.WaitTreeEmpty()
	d.WaitSessions(0)

	for _, c := range []struct {
		body string
		code float64
		msg  string
	}{
		{`not json`, -32700, "Parse error"},
		{`[1,2]`, -32600, "Invalid request"},
		{`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, -32600, "Invalid request"},
		{`{"jsonrpc":"2.0","id":1}`, -32600, "Invalid request"},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, -32600, "Invalid request"},
		{`{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`, -32600, "Invalid request"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","extra":true}`, -32600, "Invalid request"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}`, -32602, "Params must be an object"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, -32602, "Missing 'name' in params"},
		{`{"jsonrpc":"2.0","id":1,"method":"no/such"}`, -32601, "Method not found: no/such"},
		{`{"jsonrpc":"2.0","id":1,"method":"openenv/session/close","params":{"session_id":"nope"}}`, -32602, "Unknown session_id: nope"},
	} {
		r := rpc(t, d, c.body)
		e, _ := r["error"].(map[string]any)
		if rpcCode(t, r) != c.code || !strings.HasPrefix(fmt.Sprint(e["message"]), c.msg) {
			t.Errorf("%s: %v, want %v %q", c.body, r, c.code, c.msg)
		}
		if c.code == -32700 && r["id"] != nil {
			t.Errorf("parse error with id %v", r["id"])
		}
	}

	// A session created over JSON-RPC holds a slot, is usable by id, can be
	// attached over /ws, and is closed over JSON-RPC.
	r = rpc(t, d, `{"jsonrpc":"2.0","id":2,"method":"openenv/session/create"}`)
	sid, _ := obj(t, r["result"], "result")["session_id"].(string)
	if sid == "" {
		t.Fatalf("session/create: %v", r)
	}
	if d.Sessions() != 1 {
		t.Fatalf("sessions after create: %d", d.Sessions())
	}
	rpc(t, d, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"count","session_id":"`+sid+`"}}`)
	r = rpc(t, d, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"count","session_id":"`+sid+`"}}`)
	if b, _ := json.Marshal(r["result"]); !strings.Contains(string(b), `"2"`) {
		t.Fatalf("the session's tool server did not persist across calls: %v", r)
	}

	w := dialRaw(t, d, "/ws?session_id="+sid, nil)
	obsData(t, w.request(map[string]any{"type": "reset"}))
	if got := responseOf(t, obsData(t, w.request(stepFrame("tool count")))); got != "count -> 3" {
		t.Fatalf("attached /ws uses another tool server: %q", got)
	}
	// A second attachment and an unknown id are refused.
	dup := dialRaw(t, d, "/ws?session_id="+sid, nil)
	_, _, frames := dup.expectClose()
	if len(frames) != 1 {
		t.Fatalf("second attachment: %v", frames)
	}
	errorData(t, frames[0], "SESSION_ERROR")
	unknown := dialRaw(t, d, "/ws?session_id=nope", nil)
	_, _, frames = unknown.expectClose()
	if len(frames) != 1 {
		t.Fatalf("unknown attachment: %v", frames)
	}
	errorData(t, frames[0], "SESSION_ERROR")

	// Detaching keeps the session; closing over JSON-RPC ends it.
	sd := obj(t, w.request(map[string]any{"type": "state"})["data"], "state")
	h := mustProc(t, int(sd["harness_pid"].(float64)))
	w.close()
	if d.Sessions() != 1 {
		t.Fatalf("sessions after detaching: %d", d.Sessions())
	}
	r = rpc(t, d, `{"jsonrpc":"2.0","id":4,"method":"openenv/session/close","params":{"session_id":"`+sid+`"}}`)
	// The server notices the detach asynchronously: if the close arrives
	// first it answers closing (ended when the attachment ends), else closed.
	res := obj(t, r["result"], "result")
	closed := res["closed"] == true
	closing := res["closed"] == false && res["closing"] == true
	if res["session_id"] != sid || !(closed || closing) {
		t.Fatalf("session/close: %v", r)
	}
	waitGone(t, h)
	d.WaitSessions(0)
	d.WaitTreeEmpty()
}

// TestAPIToken: with a token (file or environment) every surface but
// /health needs it, as a bearer header or ?token=; the harness never sees
// it.
func TestAPIToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token-for-integ"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    spec
	}{
		{"file", spec{Flags: []string{"--api-token-file", tokenFile}, Harness: agentCmd(t)}},
		{"env", spec{Env: []string{"HARNESSD_API_TOKEN=" + token}, Harness: agentCmd(t)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := startDaemon(t, tc.s)
			good := map[string]string{"Authorization": "Bearer " + token}
			for _, auth := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": token}} {
				for _, r := range []struct{ method, path, body string }{
					{"GET", "/metadata", ""}, {"GET", "/schema", ""}, {"POST", "/reset", "{}"},
					{"POST", "/step", `{"action":{"message":"x"}}`}, {"GET", "/state", ""},
					{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`}, {"GET", "/ws", ""},
				} {
					if code, _ := d.Do(r.method, r.path, r.body, auth); code != http.StatusUnauthorized {
						t.Errorf("%s %s with %v: HTTP %d, want 401", r.method, r.path, auth, code)
					}
				}
				hdr := http.Header{}
				for k, v := range auth {
					hdr.Set(k, v)
				}
				if _, resp, err := tryDialRaw(t, d, "/ws", hdr); err == nil || resp == nil || resp.StatusCode != 401 {
					t.Errorf("/ws upgrade with %v: %v %v, want 401", auth, resp, err)
				}
			}
			if _, resp, err := tryDialRaw(t, d, "/ws?token=wrong", nil); err == nil || resp == nil || resp.StatusCode != 401 {
				t.Errorf("/ws?token=wrong: %v", err)
			}
			if code, _ := d.Do("GET", "/health", "", nil); code != 200 {
				t.Errorf("/health without a token: HTTP %d", code)
			}
			if code, v := d.Do("GET", "/metadata", "", good); code != 200 {
				t.Errorf("/metadata with the token: HTTP %d %v", code, v)
			}

			// ?token= for clients that cannot set headers.
			w := dialRaw(t, d, "/ws?token="+token, nil)
			obsData(t, w.request(map[string]any{"type": "reset"}))
			resp := responseOf(t, obsData(t, w.request(stepFrame("env HARNESSD_API_TOKEN"))))
			if resp != "HARNESSD_API_TOKEN=<unset>" {
				t.Errorf("the harness sees the API token variable: %q", resp)
			}
			sd := obj(t, w.request(map[string]any{"type": "state"})["data"], "state")
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", int(sd["harness_pid"].(float64))))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(env), token) {
				t.Errorf("the harness's environment holds the API token")
			}
			w.close()
			d.WaitSessions(0)

			hdr := http.Header{}
			hdr.Set("Authorization", "Bearer "+token)
			w = dialRaw(t, d, "/ws", hdr)
			obsData(t, w.request(map[string]any{"type": "reset"}))
		})
	}
}

// TestHarnessCannotReachOrchestration: a harness process that connects to
// an orchestration surface (here another daemon's /mcp, pointed to by its
// own MCP URL) is refused, whatever the token configuration; the same
// request from outside any harness tree is served.
func TestHarnessCannotReachOrchestration(t *testing.T) {
	t.Parallel()
	// Process isolation's peer check; a sandboxed harness cannot reach the
	// listener at all (adversary_test.go).
	target := startDaemon(t, spec{Flags: isolationProcess, Harness: agentCmd(t)})
	if code, _ := target.Do("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); code != 200 {
		t.Fatalf("POST /mcp from the test: HTTP %d", code)
	}
	d := startDaemon(t, spec{Flags: []string{"--env", "HARNESSD_MCP_URL=" + target.URL + "/mcp", isolationProcess[0], isolationProcess[1]}, Harness: agentCmd(t)})
	w := dialRaw(t, d, "/ws", nil)
	obsData(t, w.request(map[string]any{"type": "reset"}))
	sd := obj(t, w.request(map[string]any{"type": "state"})["data"], "state")
	pid := int(sd["harness_pid"].(float64))
	resp := responseOf(t, obsData(t, w.request(stepFrame(`tool add {"a":1,"b":2}`))))
	if !strings.Contains(resp, "add failed") {
		t.Fatalf("the harness's call to the orchestration API: %q", resp)
	}
	target.WaitLog(`"msg":"refused a connection from a harness process"`, fmt.Sprintf(`"peer_pid":%d`, pid))
}

// TestChatNamesTheTokenKnobOn401: `harnessd chat` against a server that
// wants an API token says which knob gives it one, without a token and
// with a wrong one; with the right one (the control) it connects and
// plays its turn.
func TestChatNamesTheTokenKnobOn401(t *testing.T) {
	t.Parallel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-chat-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, spec{Flags: []string{"--api-token-file", tokenFile}, Harness: agentCmd(t)})
	chat := func(env ...string) (string, error) {
		cmd := exec.Command(harnessdBin(t), "chat", "--url", d.URL)
		cmd.Env = append(os.Environ(), append([]string{"HARNESSD_API_TOKEN="}, env...)...)
		cmd.Stdin = strings.NewReader("reply hello\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := chat(); err == nil || !strings.Contains(out, "HTTP 401") || !strings.Contains(out, "the server wants an API token: --api-token-file FILE, or set HARNESSD_API_TOKEN") {
		t.Errorf("without a token: %v\n%s", err, out)
	}
	if out, err := chat("HARNESSD_API_TOKEN=wrong"); err == nil || !strings.Contains(out, "refused the API token given") {
		t.Errorf("with a wrong token: %v\n%s", err, out)
	}
	if out, err := chat("HARNESSD_API_TOKEN=s3cret-chat-token"); err != nil || !strings.Contains(out, "hello") {
		t.Errorf("with the token: %v\n%s", err, out)
	}
}

// TestChatExitsNonZeroWhenARequestFailed: a scripted chat whose step the
// server refuses (a step after the harness declared the episode done) says
// how many requests failed and exits 1; the same chat without that step
// (the control) exits 0.
func TestChatExitsNonZeroWhenARequestFailed(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Harness: agentCmd(t)})
	chat := func(input string) (string, error) {
		cmd := exec.Command(harnessdBin(t), "chat", "--url", d.URL)
		cmd.Stdin = strings.NewReader(input)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := chat("reply hello;;done\n"); err != nil || !strings.Contains(out, "hello") {
		t.Fatalf("the control: %v\n%s", err, out)
	}
	out, err := chat("reply hello;;done\nreply again\n/state\n")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("a chat with a refused step: %v, want exit 1 (reset, two steps and a state: one refused)\n%s", err, out)
	}
	if !strings.Contains(out, "step: ") || !strings.Contains(out, "1 of 4 requests failed") {
		t.Errorf("chat's output does not say what failed:\n%s", out)
	}
}

// chat answers /help and an unknown lone /word itself, listing its
// commands, where it sent them to the harness as turns; a line starting
// "//" goes with one "/" less, and a path is a message as before. Every
// request succeeded: exit 0.
func TestChatAnswersHelpAndUnknownCommands(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Harness: agentCmd(t)})
	cmd := exec.Command(harnessdBin(t), "chat", "--url", d.URL)
	cmd.Stdin = strings.NewReader("/help\n/bogus\n//quit\n/usr/bin/ls\n")
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	for _, want := range []string{"commands: /quit, /exit, /help, /reset, /state", "unknown command /bogus; commands:",
		`turn 1 reward=null done=false response="echo: /quit"`, `turn 2 reward=null done=false response="echo: /usr/bin/ls"`} {
		if !strings.Contains(out, want) {
			t.Errorf("chat's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "turn 3") {
		t.Errorf("a command went to the harness as a turn:\n%s", out)
	}
}

// Guards the count line of a chat whose first reset fails (ff7fd2b): chat
// ends there, exit 1, and says, as after any failed request, how many of
// its requests failed ("harnessd chat: 1 of 1 requests failed", the reset
// being its only request). The server is a real daemon whose tool server's
// URL has no listener, so every reset fails (EXECUTION_ERROR: start tool
// source ...); before ff7fd2b chat exited 1 with the reset's error only.
// The control, a daemon whose reset works, gets no count line and exit 0.
func TestChatSaysHowManyRequestsFailedWhenItsFirstResetFails(t *testing.T) {
	t.Parallel()
	chat := func(d *daemon) (string, error) {
		cmd := exec.Command(harnessdBin(t), "chat", "--url", d.URL)
		cmd.Env = append(os.Environ(), "HARNESSD_API_TOKEN=")
		cmd.Stdin = strings.NewReader("reply hello\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ok := startDaemon(t, spec{Flags: isolationProcess, Harness: agentCmd(t)})
	if out, err := chat(ok); err != nil || strings.Contains(out, "requests failed") || !strings.Contains(out, "hello") {
		t.Fatalf("the control, a reset that works: %v\n%s", err, out)
	}
	// A tool server by URL where nothing listens: serve starts (the
	// service may come back) and each reset fails starting its source.
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + gone.Addr().String() + "/mcp"
	gone.Close()
	broken := startDaemon(t, spec{Flags: append([]string{"--tool=gone=http:" + url}, isolationProcess...), Harness: agentCmd(t)})
	out, err := chat(broken)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("chat whose first reset fails: %v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(out, "reset: ") || !strings.Contains(out, "harnessd chat: 1 of 1 requests failed\n") {
		t.Errorf("chat whose first reset fails does not say how many requests failed:\n%s", out)
	}
}
