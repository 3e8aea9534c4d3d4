package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/harnessd/harnessd/client"
)

// writeConfig writes a YAML environment configuration and returns its path.
func writeConfig(t testing.TB, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "env.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// episodeConfig: the test agent with the test tools, a built-in read_file
// (so the env tool is served as env_read_file), the grader hidden and used
// by a tool rubric, a match rubric, and a trajectory record directory.
func episodeConfig(t testing.TB, recordDir string) string {
	th := testharnessBin(t)
	return writeConfig(t, fmt.Sprintf(`
name: integ-episode
harness:
  command: [%q, agent]
  builtin_tools: [read_file]
tools:
  - name: demo
    command: [%q, tools]
hide: [grade, crash, slow]
rubrics:
  - name: has-sum
    type: match
    contains: "add -> 5"
    weight: 0.5
  - name: grader
    type: tool
    tool: grade
    arguments: {answer: "{{response}}", expected: "add -> 5"}
    weight: 0.5
record_dir: %q
`, th, th, recordDir))
}

// TestWSEpisode runs a simulation episode over raw /ws frames (§3, §4,
// §16 59, 60, 61, 64, 65, 66, 121): reset with an episode id, a tool turn
// scored by two rubrics, state, a done turn, stepping past the end, a new
// episode that replaces the harness, and close.
func TestWSEpisode(t *testing.T) {
	t.Parallel()
	rec := t.TempDir()
	d := startDaemon(t, spec{Flags: []string{"--config", episodeConfig(t, rec)}})
	w := dialRaw(t, d, "/ws", nil)

	obs := obsData(t, w.request(map[string]any{"type": "reset", "data": map[string]any{"episode_id": "ep-1", "seed": 7}}))
	md := meta(t, obs)
	if obs["done"] != false || obs["reward"] != nil || md["episode_id"] != "ep-1" {
		t.Fatalf("reset observation: %v", obs)
	}
	tools := fmt.Sprint(md["injected_tools"])
	if !containsAll(tools, "add", "env_read_file", "echo") || strings.Contains(tools, "grade") || strings.Contains(tools, " read_file") {
		t.Fatalf("injected_tools = %s; want add, echo, env_read_file and no grade or bare read_file", tools)
	}

	st := w.request(map[string]any{"type": "state"})
	if st["type"] != "state" {
		t.Fatalf("state reply: %v", st)
	}
	sd := obj(t, st["data"], "state")
	if sd["episode_id"] != "ep-1" || sd["step_count"] != 0.0 {
		t.Fatalf("state after reset: %v", sd)
	}
	harness1 := mustProc(t, int(sd["harness_pid"].(float64)))

	obs = obsData(t, w.request(stepFrame(`tool add {"a":2,"b":3}`)))
	md = meta(t, obs)
	if got := responseOf(t, obs); got != "add -> 5" {
		t.Fatalf("response = %q", got)
	}
	if obs["reward"] != 1.0 || obs["done"] != false || md["turn_number"] != 1.0 {
		t.Fatalf("turn 1: reward %v done %v turn %v; want 1, false, 1", obs["reward"], obs["done"], md["turn_number"])
	}
	types := eventTypes(t, md)
	if !hasSubsequence(types, []string{"tool_call", "tool_result", "turn_complete"}) || types[len(types)-1] != "turn_complete" {
		t.Fatalf("turn_events types = %v", types)
	}
	if n := len(md["reward_details"].([]any)); n != 2 {
		t.Fatalf("reward_details has %d entries, want 2: %v", n, md["reward_details"])
	}
	var bridged bool
	for _, e := range md["turn_events"].([]any) {
		ev := e.(map[string]any)
		if ev["type"] == "tool_result" && ev["source"] == "bridge" {
			bridged = true
			if ev["data"].(map[string]any)["tool_name"] != "add" {
				t.Fatalf("bridge tool_result: %v", ev)
			}
		}
	}
	if !bridged {
		t.Fatalf("no tool_result from the bridge in %v", md["turn_events"])
	}

	obs = obsData(t, w.request(stepFrame("tool read_file {\"path\":\"a.py\"}")))
	if got := responseOf(t, obs); !strings.Contains(got, "read_file failed") && !strings.Contains(got, "read_file error") {
		t.Fatalf("the harness could call read_file under its original name: %q", got)
	}
	obs = obsData(t, w.request(stepFrame(`tool env_read_file {"path":"a.py"}`)))
	if got := responseOf(t, obs); got != "env_read_file -> contents of a.py" {
		t.Fatalf("env_read_file: %q", got)
	}
	obs = obsData(t, w.request(stepFrame(`tool grade {"answer":"x"}`)))
	if got := responseOf(t, obs); strings.Contains(got, "score") {
		t.Fatalf("the hidden grader was callable: %q", got)
	}

	obs = obsData(t, w.request(stepFrame("reply finishing;;done")))
	if obs["done"] != true || meta(t, obs)["harness_done"] != true || meta(t, obs)["turn_number"] != 5.0 {
		t.Fatalf("done turn: %v", obs)
	}
	sd = obj(t, w.request(map[string]any{"type": "state"})["data"], "state")
	if sd["step_count"] != 5.0 || sd["done"] != true {
		t.Fatalf("state after done: %v", sd)
	}
	waitGone(t, harness1) // the episode is over: its tree is gone
	e := errorData(t, w.request(stepFrame("reply more")), "EXECUTION_ERROR")
	if !strings.Contains(e["message"].(string), "reset") {
		t.Fatalf("step after the end: %v", e)
	}

	// The trajectory of the episode was recorded, in order.
	f, err := os.Open(filepath.Join(rec, "ep-1.jsonl"))
	if err != nil {
		t.Fatalf("trajectory file: %v", err)
	}
	kinds := map[string]int{}
	var completes int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Kind  string         `json:"kind"`
			Event map[string]any `json:"event"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("record line %q: %v", sc.Text(), err)
		}
		kinds[rec.Kind]++
		if rec.Kind == "event" && rec.Event["type"] == "turn_complete" {
			completes++
		}
	}
	f.Close()
	if completes != 5 || kinds["reset"] != 1 || kinds["message"] != 5 || kinds["observation"] != 6 {
		t.Fatalf("record has %d turn_complete events and records %v; want 5 turn_complete, 1 reset, 5 messages, 6 observations", completes, kinds)
	}

	// A new episode: a new harness, a fresh turn count.
	obs = obsData(t, w.request(map[string]any{"type": "reset"}))
	id2, _ := meta(t, obs)["episode_id"].(string)
	if id2 == "" || id2 == "ep-1" {
		t.Fatalf("second episode id %q", id2)
	}
	sd = obj(t, w.request(map[string]any{"type": "state"})["data"], "state")
	harness2 := mustProc(t, int(sd["harness_pid"].(float64)))
	if sd["step_count"] != 0.0 || harness2 == harness1 {
		t.Fatalf("state of the second episode: %v", sd)
	}
	obs = obsData(t, w.request(stepFrame("count")))
	if got := responseOf(t, obs); got != "turns: 1" {
		t.Fatalf("the second episode's harness is not fresh: %q", got)
	}

	// close: no reply, the server closes the socket and ends the session.
	w.send(map[string]any{"type": "close"})
	code, _, frames := w.expectClose()
	if code != websocket.StatusNormalClosure || len(frames) != 0 {
		t.Fatalf("after close: status %d, frames %v", code, frames)
	}
	waitGone(t, harness2)
	d.WaitSessions(0)
	d.WaitTreeEmpty()
}

// TestWSBadFrames sends every kind of bad frame (§3.3): each gets one error
// frame with the right code and the session keeps working.
func TestWSBadFrames(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Harness: agentCmd(t)})
	w := dialRaw(t, d, "/ws", nil)

	// Before any reset: a step is an execution error, not a dead session.
	e := errorData(t, w.request(stepFrame("hello")), "EXECUTION_ERROR")
	if e["message"] != "No active episode; call reset() before step()" {
		t.Fatalf("step before reset: %v", e)
	}

	cases := []struct {
		frame, code, message string // message: prefix, "" = any
	}{
		{`this is not json`, "INVALID_JSON", "Invalid JSON: "},
		{`{"type":"step","data":{"message":"x"}`, "INVALID_JSON", "Invalid JSON: "},
		{`{"type":"bogus"}`, "UNKNOWN_TYPE", "Unknown message type: bogus"},
		{`{}`, "UNKNOWN_TYPE", "Unknown message type: "},
		{`{"data":{"message":"x"}}`, "UNKNOWN_TYPE", "Unknown message type: "},
		{`[]`, "VALIDATION_ERROR", "Invalid message"},
		{`null`, "VALIDATION_ERROR", "Invalid message"},
		{`42`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":7}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"step"}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"step","data":null}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"step","data":[]}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"step","data":"hi"}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"step","data":{}}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"step","data":{"message":5}}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"step","data":{"message":null}}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"step","data":{"message":"x","extra":1}}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"step","data":{"message":"x","metadata":[]}}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"step","data":{"message":"x"},"extra":1}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"reset","data":{"seed":-1}}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"reset","data":{"seed":"x"}}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"reset","data":{"episode_id":5}}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"reset","data":{"episode_id":"` + strings.Repeat("e", 256) + `"}}`, "VALIDATION_ERROR", "Invalid message"},
		{`{"type":"reset","data":[]}`, "VALIDATION_ERROR", "Invalid message"},
	}
	for _, c := range cases {
		f := w.requestText(c.frame)
		data := errorData(t, f, c.code)
		msg := data["message"].(string)
		if !strings.HasPrefix(msg, c.message) || (c.code == "UNKNOWN_TYPE" && msg != c.message) {
			t.Errorf("%.60s: message %q, want %q", c.frame, msg, c.message)
		}
		if c.code == "VALIDATION_ERROR" {
			errs, ok := data["errors"].([]any)
			if !ok || len(errs) == 0 {
				t.Errorf("%.60s: no errors list: %v", c.frame, data)
				continue
			}
			for _, k := range []string{"type", "loc", "msg"} {
				if _, ok := errs[0].(map[string]any)[k]; !ok {
					t.Errorf("%.60s: validation error without %q: %v", c.frame, k, errs[0])
				}
			}
		}
		// The session lives on: state still answers.
		if st := w.request(map[string]any{"type": "state"}); st["type"] != "state" {
			t.Fatalf("after %.60s: state answered %v", c.frame, st)
		}
	}
	if t.Failed() {
		return
	}

	// And works: an episode with a turn, and bad frames mid-episode too.
	obsData(t, w.request(map[string]any{"type": "reset", "data": map[string]any{"unknown_kwarg": true}}))
	errorData(t, w.requestText(`{"type":"step","data":{"msg":"typo"}}`), "VALIDATION_ERROR")
	obs := obsData(t, w.request(map[string]any{"type": "step", "data": map[string]any{"message": "reply fine", "metadata": map[string]any{"k": 1}}}))
	if got := responseOf(t, obs); got != "fine" {
		t.Fatalf("turn after bad frames: %q", got)
	}
	errorData(t, w.requestText(`nope`), "INVALID_JSON")
	obs = obsData(t, w.request(stepFrame("count")))
	if got := responseOf(t, obs); got != "turns: 2" {
		t.Fatalf("a bad frame reached the harness: %q", got)
	}
}

// TestWSOversizeFrame: frames above the library's 32 KiB default pass; a
// frame above --max-frame-bytes gets an error frame and the session lives;
// an observation that would be above it is trimmed to fit, and says so.
func TestWSOversizeFrame(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--max-frame-bytes", "256KiB"}, Harness: agentCmd(t)})
	w := dialRaw(t, d, "/ws", nil)
	obsData(t, w.request(map[string]any{"type": "reset"}))

	// The reply's text is in the observation six times (response, the
	// text_output and turn_complete events, all under metadata twice).
	big := strings.Repeat("b", 36<<10) // > 32 KiB, 6x < 256 KiB
	obs := obsData(t, w.request(stepFrame("reply "+big)))
	if got := responseOf(t, obs); got != big {
		t.Fatalf("a 36 KiB message came back as %d bytes", len(got))
	}

	bigger := strings.Repeat("c", 100<<10) // accepted, but its observation does not fit as is
	w.send(stepFrame("reply " + bigger))
	b, err := w.readRaw()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 256<<10 {
		t.Fatalf("observation frame of %d bytes over the 256 KiB limit", len(b))
	}
	var f map[string]any
	json.Unmarshal(b, &f)
	md := meta(t, obsData(t, f))
	tr, _ := md["truncated"].(map[string]any)
	if tr["reason"] != "frame_limit" || tr["events_dropped"] != 1.0 || tr["response_bytes_dropped"] == nil {
		t.Fatalf("trimmed observation: truncated %v", tr)
	}
	if got := md["response"].(string); !strings.HasPrefix(bigger, got) || len(got) < 10<<10 {
		t.Fatalf("trimmed response of %d bytes", len(got))
	}

	huge := strings.Repeat("h", 300<<10)
	data := errorData(t, w.request(stepFrame("reply "+huge)), "VALIDATION_ERROR")
	if msg := data["message"].(string); !strings.Contains(msg, "exceeds the maximum") {
		t.Fatalf("oversize frame: %v", data)
	}
	obs = obsData(t, w.request(stepFrame("count")))
	if got := responseOf(t, obs); got != "turns: 3" {
		t.Fatalf("after the oversize frame: %q", got)
	}
}

// TestWSCapacity: with --max-sessions 1 a second /ws gets CAPACITY_REACHED
// with the counts, then a close; closing the first frees the slot.
func TestWSCapacity(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--max-sessions", "1"}, Harness: agentCmd(t)})
	first := dialRaw(t, d, "/ws", nil)
	obsData(t, first.request(map[string]any{"type": "reset"}))
	if h := d.Health(); h["active_sessions"] != 1.0 || h["max_sessions"] != 1.0 {
		t.Fatalf("/health with one session: %v", h)
	}

	second := dialRaw(t, d, "/ws", nil)
	code, _, frames := second.expectClose()
	if len(frames) != 1 {
		t.Fatalf("over capacity: frames %v", frames)
	}
	data := errorData(t, frames[0], "CAPACITY_REACHED")
	if data["active_sessions"] != 1.0 || data["max_sessions"] != 1.0 {
		t.Fatalf("CAPACITY_REACHED data: %v", data)
	}
	if code == websocket.StatusNormalClosure || code == -1 {
		t.Fatalf("over-capacity close status %d", code)
	}

	// JSON-RPC session creation is refused the same way.
	_, resp := d.Do("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`, nil)
	rerr := obj(t, obj(t, resp, "rpc")["error"], "rpc error")
	if rerr["code"] != -32000.0 || obj(t, rerr["data"], "data")["max_sessions"] != 1.0 {
		t.Fatalf("session/create at capacity: %v", resp)
	}

	// The first session is unaffected.
	if got := responseOf(t, obsData(t, first.request(stepFrame("reply still here")))); got != "still here" {
		t.Fatalf("first session: %q", got)
	}
	first.send(map[string]any{"type": "close"})
	first.expectClose()
	d.WaitSessions(0)

	third := dialRaw(t, d, "/ws", nil)
	obsData(t, third.request(map[string]any{"type": "reset"}))
	if got := responseOf(t, obsData(t, third.request(stepFrame("reply third")))); got != "third" {
		t.Fatalf("third session: %q", got)
	}
}

// TestWSDisconnectMidTurn: a client that drops its socket during a turn
// ends the turn: the harness tree is killed and the slot is freed.
func TestWSDisconnectMidTurn(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--max-sessions", "1", isolationProcess[0], isolationProcess[1]}, Harness: agentCmd(t)})
	w := dialRaw(t, d, "/ws", nil)
	obsData(t, w.request(map[string]any{"type": "reset"}))
	sd := obj(t, w.request(map[string]any{"type": "state"})["data"], "state")
	h := mustProc(t, int(sd["harness_pid"].(float64)))
	resp := responseOf(t, obsData(t, w.request(stepFrame("spawn ignore-term"))))
	child := mustProc(t, pidAfter(t, resp, "spawned"))

	started := filepath.Join(t.TempDir(), "started")
	w.send(stepFrame("write " + started + " yes;;sleep 30s"))
	waitFile(t, started) // the turn is running
	w.c.CloseNow()       // no close frame: the peer just goes away

	waitGone(t, h, child)
	d.WaitSessions(0)
	d.WaitTreeEmpty()

	again := dialRaw(t, d, "/ws", nil)
	obsData(t, again.request(map[string]any{"type": "reset"}))
}

// TestWSMCPFrames: mcp frames on /ws carry JSON-RPC (§3.1, §3.2), also
// before reset (§16 72).
func TestWSMCPFrames(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{toolsFlag(t)}, Harness: agentCmd(t)})
	w := dialRaw(t, d, "/ws", nil)

	f := w.request(map[string]any{"type": "mcp", "data": map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}})
	if f["type"] != "mcp" {
		t.Fatalf("mcp reply: %v", f)
	}
	rpc := obj(t, f["data"], "rpc")
	if rpc["jsonrpc"] != "2.0" || rpc["id"] != 1.0 {
		t.Fatalf("rpc envelope: %v", rpc)
	}
	var names []string
	for _, tl := range obj(t, rpc["result"], "result")["tools"].([]any) {
		tool := tl.(map[string]any)
		names = append(names, tool["name"].(string))
		if _, ok := tool["inputSchema"]; !ok {
			t.Fatalf("tool without inputSchema: %v", tool)
		}
	}
	if !containsAll(strings.Join(names, ","), "add", "echo", "read_file") {
		t.Fatalf("tools/list before reset: %v", names)
	}

	f = w.request(map[string]any{"type": "mcp", "data": map[string]any{"jsonrpc": "2.0", "id": "c", "method": "tools/call",
		"params": map[string]any{"name": "add", "arguments": map[string]any{"a": 40, "b": 2}}}})
	rpc = obj(t, f["data"], "rpc")
	if b, _ := json.Marshal(rpc["result"]); !strings.Contains(string(b), `"42"`) || rpc["id"] != "c" {
		t.Fatalf("tools/call add: %v", rpc)
	}

	f = w.request(map[string]any{"type": "mcp", "data": map[string]any{"jsonrpc": "1.0", "id": 2, "method": "tools/list"}})
	if c := obj(t, obj(t, f["data"], "rpc")["error"], "error")["code"]; c != -32600.0 {
		t.Fatalf("invalid inner request: %v", f)
	}
	f = w.request(map[string]any{"type": "mcp", "data": map[string]any{"jsonrpc": "2.0", "id": 3, "method": "nope"}})
	if c := obj(t, obj(t, f["data"], "rpc")["error"], "error")["code"]; c != -32601.0 {
		t.Fatalf("unknown method: %v", f)
	}
	obsData(t, w.request(map[string]any{"type": "reset"}))
}

// TestWSReconnectAfterSlowClose: the same with a harness that takes a
// second to stop (it ignores SIGTERM; stop grace 1s), so the session's end
// outlasts the close handshake unless the server holds the handshake until
// the session is gone: reconnecting at once must find the slot free.
func TestWSReconnectAfterSlowClose(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "env.yaml")
	yaml := fmt.Sprintf("harness:\n  command: [%q, agent, --ignore-term]\n  stop_grace: 1s\n", testharnessBin(t))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, spec{Flags: append([]string{"--max-sessions", "1", "--config", cfg}, isolationProcess...)})
	ctx := context.Background()
	for i := range 3 {
		env, err := client.Dial(ctx, d.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
			t.Fatalf("client connection %d: %v", i, err)
		}
		if err := env.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
}

// TestWSReconnectAfterCloseMidTurn: a client that closes while its turn
// runs (a step sent, then the close frame and the close handshake at once,
// as a trainer abandoning an episode does) finds its slot free the moment
// its close handshake completes: the server abandons the turn, frees the
// slot and only then answers the handshake.
func TestWSReconnectAfterCloseMidTurn(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--max-sessions", "1"}, Harness: agentCmd(t)})
	ctx := context.Background()
	for i := range 3 {
		c, _, err := websocket.Dial(ctx, "ws://"+d.Addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"reset"}`))
		if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), `"observation"`) {
			t.Fatalf("reset %d: %s %v", i, b, err)
		}
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"step","data":{"message":"sleep 30s"}}`))
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`))
		c.Close(websocket.StatusNormalClosure, "")
		env, err := client.Dial(ctx, d.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
			t.Fatalf("reconnect %d right after a close mid-turn: %v", i, err)
		}
		env.Close()
	}
}

// TestWSReconnectAfterClose: a client that closes its session (close frame,
// then the close handshake, as OpenEnv's client and the Go client do) can
// reconnect at once, even with a single slot: the session is gone before
// the socket's close completes.
func TestWSReconnectAfterClose(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--max-sessions", "1"}, Harness: agentCmd(t)})
	for i := range 5 {
		w := dialRaw(t, d, "/ws", nil)
		f := w.request(map[string]any{"type": "reset"})
		if f["type"] != "observation" {
			t.Fatalf("raw connection %d: %v", i, f)
		}
		w.send(map[string]any{"type": "close"})
		if code, _, _ := w.expectClose(); code != websocket.StatusNormalClosure {
			t.Fatalf("raw connection %d closed with %d", i, code)
		}
	}
	ctx := context.Background()
	for i := range 5 {
		env, err := client.Dial(ctx, d.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
			t.Fatalf("client connection %d: %v", i, err)
		}
		if err := env.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
}
