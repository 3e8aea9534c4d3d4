package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/websocket"
)

// production starts a production-mode daemon.
func production(t *testing.T, flags []string, harness ...string) *daemon {
	t.Helper()
	if len(harness) == 0 {
		harness = agentCmd(t)
	}
	return startDaemon(t, spec{Flags: append([]string{"--mode", "production"}, flags...), Harness: harness})
}

// harnessTurn sends a message and reads frames up to the turn's end
// (turn_complete or a terminal error).
func harnessTurn(t *testing.T, w *rawWS, content string) []map[string]any {
	t.Helper()
	w.send(map[string]any{"type": "message", "content": content})
	return readTurn(t, w)
}

func readTurn(t *testing.T, w *rawWS) []map[string]any {
	t.Helper()
	var frames []map[string]any
	for {
		f := w.read()
		frames = append(frames, f)
		switch f["type"] {
		case "turn_complete":
			return frames
		case "error", "protocol_error":
			return frames
		}
		checkEvent(t, f)
	}
}

// checkEvent checks a streamed HarnessEvent frame.
func checkEvent(t *testing.T, f map[string]any) {
	t.Helper()
	if _, ok := f["timestamp"].(float64); !ok {
		t.Fatalf("event without a timestamp: %v", f)
	}
	if _, ok := f["data"].(map[string]any); !ok {
		t.Fatalf("event without data: %v", f)
	}
}

func frameTypes(frames []map[string]any) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i], _ = f["type"].(string)
	}
	return out
}

func lastData(t *testing.T, frames []map[string]any) map[string]any {
	t.Helper()
	return obj(t, frames[len(frames)-1]["data"], "last frame data")
}

// sessionStarted checks the first frame of a /harness session.
func sessionStarted(t *testing.T, w *rawWS, name string) string {
	t.Helper()
	f := w.read()
	if f["type"] != "session_started" {
		t.Fatalf("first frame: %v", f)
	}
	if _, has := f["timestamp"]; has {
		t.Fatalf("session_started has a timestamp: %v", f)
	}
	data := obj(t, f["data"], "session_started data")
	sid, _ := data["session_id"].(string)
	if len(sid) != 36 || (name != "" && data["harness"] != name) {
		t.Fatalf("session_started data: %v", data)
	}
	return sid
}

// TestProductionModeGating checks the endpoint matrix (§1) for every way of
// choosing the mode (§16 97, 99, 113–116).
func TestProductionModeGating(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		flags, env []string
		production bool
	}{
		{"default", nil, nil, false},
		{"flag", []string{"--mode", "production"}, nil, true},
		{"flag-mixed-case", []string{"--mode", "Production"}, nil, true},
		{"env", nil, []string{"OPENENV_MODE=production"}, true},
		{"env-upper", nil, []string{"OPENENV_MODE=PRODUCTION"}, true},
		{"flag-beats-env", []string{"--mode", "simulation"}, []string{"OPENENV_MODE=production"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := startDaemon(t, spec{Flags: tc.flags, Env: tc.env, Harness: agentCmd(t)})
			want := "simulation"
			if tc.production {
				want = "production"
			}
			if h := d.Health(); h["mode"] != want || h["status"] != "healthy" {
				t.Fatalf("/health: %v, want mode %s", h, want)
			}
			for _, p := range []string{"/metadata", "/schema"} {
				if code, _ := d.Do("GET", p, "", nil); code != 200 {
					t.Errorf("GET %s: %d", p, code)
				}
			}
			for _, r := range []struct{ method, path, body string }{
				{"POST", "/reset", `{"seed":"not an int"}`}, // 422 when present: starts nothing
				{"POST", "/step", `{}`},
				{"GET", "/state", ""},
			} {
				code, _ := d.Do(r.method, r.path, r.body, nil)
				gone := code == http.StatusNotFound || code == http.StatusMethodNotAllowed
				if gone != tc.production {
					t.Errorf("%s %s: HTTP %d (production %v)", r.method, r.path, code, tc.production)
				}
			}
			hw, resp, err := tryDialRaw(t, d, "/harness", nil)
			if tc.production {
				if err != nil {
					t.Fatalf("/harness: %v", err)
				}
				sessionStarted(t, hw, "")
				hw.close()
				d.WaitSessions(0)
			} else if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
				t.Fatalf("/harness in simulation: %v %v, want 404", resp, err)
			}
			// /ws is served in both modes.
			w := dialRaw(t, d, "/ws", nil)
			if f := w.request(map[string]any{"type": "state"}); f["type"] != "state" {
				t.Fatalf("/ws state: %v", f)
			}
		})
	}
}

// TestInvalidMode: an unknown mode is a usage error naming both modes.
func TestInvalidMode(t *testing.T) {
	t.Parallel()
	for _, s := range []spec{
		{Flags: []string{"--mode", "staging"}},
		{Env: []string{"OPENENV_MODE=staging"}},
	} {
		cmd := exec.Command(harnessdBin(t), append(append([]string{"serve", "--listen", "127.0.0.1:0"}, s.Flags...), append([]string{"--"}, agentCmd(t)...)...)...)
		cmd.Env = cleanEnv(s.Env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != 2 || !containsAll(string(out), "simulation", "production") {
			t.Errorf("%v: %v\n%s", s, err, out)
		}
	}
}

// TestNoProcessBeforeFirstSession: building the server (in either mode)
// starts no harness and no tool server (§16 100).
func TestNoProcessBeforeFirstSession(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"production", "simulation"} {
		d := startDaemon(t, spec{Flags: []string{"--mode", mode, toolsFlag(t)}, Harness: agentCmd(t)})
		d.Health()
		d.Do("GET", "/metadata", "", nil)
		d.Do("GET", "/schema", "", nil)
		if tree := d.Tree(); len(tree) != 0 {
			t.Fatalf("%s: processes before any session: %s", mode, describe(tree))
		}
		if n := d.Sessions(); n != 0 {
			t.Fatalf("%s: %d sessions before any connection", mode, n)
		}
	}
}

// TestHarnessStreamingTurns: production over real sockets (§16 96, 101,
// 102, 122): session_started first, each event its own frame ending in
// turn_complete, one harness across turns, done ends the session.
func TestHarnessStreamingTurns(t *testing.T) {
	t.Parallel()
	d := production(t, []string{"--name", "scripted-cli", toolsFlag(t)})
	if code, _ := d.Do("POST", "/reset", "{}", nil); code != 404 && code != 405 {
		t.Fatalf("POST /reset in production: %d", code)
	}
	w := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, w, "scripted-cli")
	h := d.WaitTree("testharness agent")

	frames := harnessTurn(t, w, `tool add {"a":2,"b":3}`)
	types := frameTypes(frames)
	if !hasSubsequence(types, []string{"tool_call", "tool_result", "turn_complete"}) {
		t.Fatalf("frames %v", types)
	}
	end := lastData(t, frames)
	if end["response"] != "add -> 5" || end["done"] != false {
		t.Fatalf("turn_complete: %v", end)
	}
	for _, f := range frames {
		if f["type"] == "tool_result" {
			if data := f["data"].(map[string]any); data["tool_name"] != "add" || fmt.Sprint(data["result"]) != "5" {
				t.Fatalf("tool_result: %v", f)
			}
		}
	}

	frames = harnessTurn(t, w, "history")
	if got := lastData(t, frames)["response"]; got != `history: tool add {"a":2,"b":3} | history` {
		t.Fatalf("second turn: %v", got)
	}
	if !h.alive() || len(d.Tree()) != 2 { // the same harness, plus the tool server
		t.Fatalf("harness replaced between turns: %s", describe(d.Tree()))
	}
	if n := d.Sessions(); n != 1 {
		t.Fatalf("sessions during the connection: %d", n)
	}

	frames = harnessTurn(t, w, "reply finished;;done")
	if end := lastData(t, frames); end["done"] != true || end["response"] != "finished" {
		t.Fatalf("done turn: %v", end)
	}
	code, _, rest := w.expectClose()
	if code != websocket.StatusNormalClosure || len(rest) != 0 {
		t.Fatalf("after done: close %d, frames %v", code, rest)
	}
	waitGone(t, h)
	d.WaitSessions(0)
	d.WaitTreeEmpty()
}

// TestHarnessBadFrames: bad client frames get protocol_error and never
// reach the harness (§16 103–107).
func TestHarnessBadFrames(t *testing.T) {
	t.Parallel()
	d := production(t, nil)
	w := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, w, "")
	for _, c := range []struct{ frame, code string }{
		{`this is not json`, "INVALID_JSON"},
		{`{"type":"bogus"}`, "VALIDATION_ERROR"},
		{`{"type":"message"}`, "VALIDATION_ERROR"},
		{`{"type":"message","content":5}`, "VALIDATION_ERROR"},
		{`{"content":"no type"}`, "VALIDATION_ERROR"},
		{`null`, "VALIDATION_ERROR"},
		{`[]`, "VALIDATION_ERROR"},
		{`"a string"`, "VALIDATION_ERROR"},
	} {
		f := w.requestText(c.frame)
		data, _ := f["data"].(map[string]any)
		if f["type"] != "protocol_error" || data["code"] != c.code || fmt.Sprint(data["message"]) == "" {
			t.Errorf("%s: %v, want protocol_error %s", c.frame, f, c.code)
		}
		if n := d.Sessions(); n != 1 {
			t.Errorf("%s: sessions %d", c.frame, n)
		}
	}
	// Extra keys in a valid message are ignored; no bad frame made a turn.
	harnessTurn(t, w, "count")
	w.send(map[string]any{"type": "message", "content": "count", "extra": true})
	frames := readTurn(t, w)
	if got := lastData(t, frames)["response"]; got != "turns: 2" {
		t.Fatalf("turns after bad frames: %v", got)
	}
	w.close()
	d.WaitSessions(0)
	d.WaitTreeEmpty()
}

// TestHarnessCancel: {"type":"cancel"} interrupts a running turn, which
// completes as cancelled; the conversation continues.
func TestHarnessCancel(t *testing.T) {
	t.Parallel()
	d := production(t, nil)
	w := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, w, "")
	w.send(map[string]any{"type": "cancel"}) // no turn running: ignored

	w.send(map[string]any{"type": "message", "content": "reply started;;sleep 60s;;reply not reached"})
	f := w.read()
	if f["type"] != "text_output" || f["data"].(map[string]any)["text"] != "started" {
		t.Fatalf("first event: %v", f)
	}
	w.send(map[string]any{"type": "cancel"})
	frames := readTurn(t, w)
	end := lastData(t, frames)
	if frames[len(frames)-1]["type"] != "turn_complete" || end["cancelled"] != true || strings.Contains(fmt.Sprint(end["response"]), "not reached") {
		t.Fatalf("cancelled turn: %v", frames)
	}
	frames = harnessTurn(t, w, "history")
	if got := lastData(t, frames)["response"]; !strings.HasSuffix(fmt.Sprint(got), "| history") {
		t.Fatalf("after cancel: %v", got)
	}
}

// TestHarnessCrashMidTurn: a harness that dies mid-turn gives one terminal
// error event with a sanitized message, then the socket closes and the
// session ends (§16 108).
func TestHarnessCrashMidTurn(t *testing.T) {
	t.Parallel()
	d := production(t, []string{toolsFlag(t)})
	w := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, w, "")
	frames := harnessTurn(t, w, "stderr leaked-secret-value;;reply before;;crash 3")
	last := frames[len(frames)-1]
	data := obj(t, last["data"], "error data")
	if last["type"] != "error" || data["recoverable"] != false || data["message"] != "harness turn failed" {
		t.Fatalf("terminal frame: %v", last)
	}
	if _, has := data["code"]; has {
		t.Fatalf("a terminal event carries a session-level code: %v", data)
	}
	b, _ := json.Marshal(frames)
	if strings.Contains(string(b), "leaked-secret-value") || strings.Contains(string(b), "code 3") {
		t.Fatalf("harness details leaked: %s", b)
	}
	if n := strings.Count(string(b), `"type":"error"`); n != 1 {
		t.Fatalf("%d error frames: %s", n, b)
	}
	code, _, rest := w.expectClose()
	if len(rest) != 0 || code == -1 {
		t.Fatalf("after the terminal error: close %d, frames %v", code, rest)
	}
	d.WaitSessions(0)
	d.WaitTreeEmpty()
}

// TestHarnessDeadBetweenTurns: a harness that is gone before a turn (after
// 0 or 1 completed turns) gives a terminal error, and the message never
// reaches it (§16 117–118).
func TestHarnessDeadBetweenTurns(t *testing.T) {
	t.Parallel()
	t.Run("after-one-turn", func(t *testing.T) {
		t.Parallel()
		d := production(t, nil)
		w := dialRaw(t, d, "/harness", nil)
		sessionStarted(t, w, "")
		h := d.WaitTree("testharness agent")
		frames := harnessTurn(t, w, "reply bye;;exit 0")
		if lastData(t, frames)["response"] != "bye" {
			t.Fatalf("exit turn: %v", frames)
		}
		waitReaped(t, h) // the daemon has seen the exit
		deadBetweenTurns(t, d, w)
	})
	t.Run("before-any-turn", func(t *testing.T) {
		t.Parallel()
		d := production(t, nil)
		w := dialRaw(t, d, "/harness", nil)
		sessionStarted(t, w, "")
		h := d.WaitTree("testharness agent")
		syscall.Kill(h.Pid, syscall.SIGKILL)
		waitReaped(t, h) // the daemon has seen the exit
		deadBetweenTurns(t, d, w)
	})
}

func deadBetweenTurns(t *testing.T, d *daemon, w *rawWS) {
	t.Helper()
	frames := harnessTurn(t, w, "reply hello")
	if len(frames) != 1 {
		t.Fatalf("frames for a dead harness: %v", frames)
	}
	data := lastData(t, frames)
	if frames[0]["type"] != "error" || data["recoverable"] != false || data["message"] != "harness process is not running" {
		t.Fatalf("dead harness: %v", frames)
	}
	w.expectClose()
	d.WaitSessions(0)
	d.WaitTreeEmpty()
}

// TestHarnessTurnTimeout: a hanging harness past the turn budget gives a
// terminal error naming the budget; its tree is killed (§16 119).
func TestHarnessTurnTimeout(t *testing.T) {
	t.Parallel()
	d := production(t, []string{"--turn-timeout", "200ms"})
	w := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, w, "")
	h := d.WaitTree("testharness agent")
	frames := harnessTurn(t, w, "ignore-term;;hang")
	data := lastData(t, frames)
	if frames[len(frames)-1]["type"] != "error" || data["recoverable"] != false ||
		!strings.Contains(fmt.Sprint(data["message"]), "exceeded 0.2 seconds") {
		t.Fatalf("timeout: %v", frames)
	}
	w.expectClose()
	waitGone(t, h)
	d.WaitSessions(0)
	d.WaitTreeEmpty()
}

// TestHarnessNoTurnComplete: a harness whose output ends without
// turn_complete ends the session with a terminal error (§16 120).
func TestHarnessNoTurnComplete(t *testing.T) {
	t.Parallel()
	d := production(t, nil)
	w := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, w, "")
	frames := harnessTurn(t, w, "reply partial;;closeout")
	types := frameTypes(frames)
	data := lastData(t, frames)
	if types[0] != "text_output" || types[len(types)-1] != "error" || data["recoverable"] != false {
		t.Fatalf("frames: %v", frames)
	}
	if msg := fmt.Sprint(data["message"]); !strings.Contains(msg, "TURN_COMPLETE") {
		t.Fatalf("message %q does not say that turn_complete is missing", msg)
	}
	w.expectClose()
	d.WaitSessions(0)
	d.WaitTreeEmpty()
}

// TestHarnessStartupSecret: a harness that prints a secret to stderr and
// exits at start-up gives SESSION_ERROR "harness session failed" without
// the secret (§16 123) — on /harness and on /ws in production.
func TestHarnessStartupSecret(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-FAKE-SECRET-42"
	d := production(t, nil, agentCmd(t, "--stderr", "token="+secret, "--crash-on-start", "3")...)
	w := dialRaw(t, d, "/harness", nil)
	code, _, frames := w.expectClose()
	if len(frames) != 1 {
		t.Fatalf("frames: %v", frames)
	}
	data := errorData(t, frames[0], "SESSION_ERROR")
	if data["message"] != "harness session failed" {
		t.Fatalf("message: %v", data)
	}
	b, _ := json.Marshal(frames)
	if strings.Contains(string(b), secret) || strings.Contains(strings.ToLower(string(b)), "stderr") {
		t.Fatalf("the frame leaks harness output: %s", b)
	}
	if code == websocket.StatusNormalClosure || code == -1 {
		t.Fatalf("close status %d", code)
	}
	d.WaitSessions(0)

	// /ws in production: a startup failure is an observation, sanitized.
	ws := dialRaw(t, d, "/ws", nil)
	raw := ws.requestText(`{"type":"reset"}`)
	obs := obsData(t, raw)
	if meta(t, obs)["error_type"] != "startup_failed" || obs["done"] != true {
		t.Fatalf("/ws reset: %v", obs)
	}
	b, _ = json.Marshal(raw)
	if strings.Contains(string(b), secret) {
		t.Fatalf("/ws in production leaks the harness's stderr: %s", b)
	}
	if d.Log() == "" || !strings.Contains(d.Log(), secret) {
		t.Logf("note: the daemon log does not carry the stderr tail")
	}
}

// TestHarnessDisconnect: a client that disconnects (idle or mid-turn) ends
// its session and its harness tree (§16 109).
func TestHarnessDisconnect(t *testing.T) {
	t.Parallel()
	// The harness reports its children's pids, which only process
	// isolation shares with the host.
	d := production(t, []string{toolsFlag(t), "--max-sessions", "2", isolationProcess[0], isolationProcess[1]})

	idle := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, idle, "")
	busy := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, busy, "")
	d.WaitSessions(2)

	busy.send(map[string]any{"type": "message", "content": "reply working;;spawn ignore-term;;escape ignore-term;;sleep 60s"})
	var pids []proc
	for len(pids) < 2 {
		f := busy.read()
		if f["type"] != "text_output" {
			continue
		}
		text := fmt.Sprint(f["data"].(map[string]any)["text"])
		for _, word := range []string{"spawned", "escaped"} {
			if strings.HasPrefix(text, word+" ") {
				pids = append(pids, mustProc(t, pidAfter(t, text, word)))
			}
		}
	}
	tree := d.Tree()
	if len(tree) < 6 { // two harnesses, two tool servers, two sleepers
		t.Fatalf("tree before disconnect: %s", describe(tree))
	}
	idle.close()
	busy.c.CloseNow()
	waitGone(t, append(tree, pids...)...)
	d.WaitSessions(0)
	d.WaitTreeEmpty()
}

// TestHarnessCapacity: with one slot taken, a second /harness gets
// CAPACITY_REACHED as its first frame, then a close (§16 112).
func TestHarnessCapacity(t *testing.T) {
	t.Parallel()
	d := production(t, []string{"--max-sessions", "1"})
	first := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, first, "")
	second := dialRaw(t, d, "/harness", nil)
	_, _, frames := second.expectClose()
	if len(frames) != 1 {
		t.Fatalf("frames: %v", frames)
	}
	data := errorData(t, frames[0], "CAPACITY_REACHED")
	// The reference's message, then how to free a slot.
	if msg, _ := data["message"].(string); !strings.HasPrefix(msg, "Server at capacity: 1/1 sessions active. Cannot accept new connections. ") ||
		!strings.Contains(msg, "--max-sessions") {
		t.Fatalf("message: %v", data)
	}
	if got := lastData(t, harnessTurn(t, first, "reply ok"))["response"]; got != "ok" {
		t.Fatalf("first session after the refusal: %v", got)
	}
	first.close()
	d.WaitSessions(0)
	third := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, third, "")
}

// TestHarnessHTTPClose: openenv/session/close on an attached /harness
// session answers closing, the session stays usable until the socket goes
// (§16 111, §13.4).
func TestHarnessHTTPClose(t *testing.T) {
	t.Parallel()
	d := production(t, nil)
	w := dialRaw(t, d, "/harness", nil)
	sid := sessionStarted(t, w, "")
	h := d.WaitTree("testharness agent")
	r := rpc(t, d, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/close","params":{"session_id":"`+sid+`"}}`)
	res := obj(t, r["result"], "result")
	if res["closed"] != false || res["closing"] != true || res["session_id"] != sid {
		t.Fatalf("close of an attached session: %v", r)
	}
	if !h.alive() {
		t.Fatal("the harness died on an HTTP close of an attached session")
	}
	if got := lastData(t, harnessTurn(t, w, "reply still"))["response"]; got != "still" {
		t.Fatalf("turn after the HTTP close: %v", got)
	}
	w.close()
	waitGone(t, h)
	d.WaitSessions(0)
}

// TestIdleReaper: the reaper destroys an idle session that no socket holds,
// but never one whose socket is open or whose turn runs, however long it is
// silent (§5, §16 110, §17.6). The reaper wakes every max(timeout/4, 1s), so
// with a 1s timeout an idle session is gone within about 2s; each subtest
// also shows a session being reaped, so a reaper that never runs fails.
func TestIdleReaper(t *testing.T) {
	t.Parallel()
	t.Run("simulation", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, spec{Flags: []string{"--idle-timeout", "1s", "--max-sessions", "3"}, Harness: agentCmd(t)})
		// A /ws session that sits idle with its socket open throughout.
		w := dialRaw(t, d, "/ws", nil)
		obsData(t, w.request(map[string]any{"type": "reset"}))

		// An HTTP session (no socket) with a silent turn longer than the
		// timeout: kept while the turn runs, reaped once idle.
		if code, v := d.Do("POST", "/reset", "{}", nil); code != 200 {
			t.Fatalf("POST /reset: %d %v", code, v)
		}
		_, v := d.Do("GET", "/state", "", nil)
		h := mustProc(t, int(obj(t, v, "state")["harness_pid"].(float64)))
		code, v := d.Do("POST", "/step", `{"action":{"message":"sleep 3s;;reply woke"}}`, nil)
		if obs := checkObservation(t, v); code != 200 || responseOf(t, obs) != "woke" || obs["done"] != false {
			t.Fatalf("long silent HTTP turn: %d %v", code, v)
		}
		waitGone(t, h)
		d.WaitSessions(1)

		// The /ws session, idle all along, was spared.
		if got := responseOf(t, obsData(t, w.request(stepFrame("count")))); got != "turns: 1" {
			t.Fatalf("the open /ws session: %q", got)
		}
	})
	t.Run("production", func(t *testing.T) {
		t.Parallel()
		d := production(t, []string{"--idle-timeout", "1s", "--max-sessions", "2"})
		r := rpc(t, d, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`)
		if _, ok := obj(t, r["result"], "result")["session_id"].(string); !ok {
			t.Fatalf("session/create: %v", r)
		}
		w := dialRaw(t, d, "/harness", nil)
		sessionStarted(t, w, "")
		frames := harnessTurn(t, w, "sleep 3s;;reply woke")
		if end := lastData(t, frames); frames[len(frames)-1]["type"] != "turn_complete" || end["response"] != "woke" {
			t.Fatalf("long silent /harness turn: %v", frames)
		}
		d.WaitSessions(1) // the unattached JSON-RPC session was reaped
		if got := lastData(t, harnessTurn(t, w, "count"))["response"]; got != "turns: 2" {
			t.Fatalf("the /harness session: %v", got)
		}
		w.close()
		d.WaitSessions(0)
	})
}

func errorsAs(err error, target **exec.ExitError) bool {
	ee, ok := err.(*exec.ExitError)
	if ok {
		*target = ee
	}
	return ok
}
