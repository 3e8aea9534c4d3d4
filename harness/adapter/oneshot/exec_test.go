package oneshot

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { testbin.Cleanup(); os.Exit(code) }))
}

func launch(t *testing.T, opts map[string]any, command ...string) *harness.Launch {
	t.Helper()
	l := adaptertest.Launch(t, command...)
	ws, home := filepath.Join(l.Workspace, "workspace"), filepath.Join(l.Workspace, "home")
	for _, d := range []string{ws, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	l.Workspace, l.Home, l.Options = ws, home, opts
	l.Env = process.DefaultEnviron(map[string]string{"HOME": home})
	return l
}

// oneshot returns the fake one-shot agent's templates for a format: a new
// session on turn 1, --resume on later turns.
func oneshot(t *testing.T, format string) (first, next []string) {
	base := []string{testbin.Path(t, "testharness"), "agent", "--protocol", "oneshot", "--format", format}
	first = append(append([]string(nil), base...), "--", PhMessage)
	next = append(append([]string(nil), base...), "--resume", PhSessionID, "--", PhMessage)
	return first, next
}

func opts(t *testing.T, format string, extra map[string]any) map[string]any {
	first, next := oneshot(t, format)
	o := map[string]any{"format": format, "first_command": first, "command": next}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

func start(t *testing.T, l *harness.Launch) *Adapter {
	t.Helper()
	a := New()
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop(context.Background()) })
	return a
}

func agent(t *testing.T, format string, extra map[string]any) *Adapter {
	t.Helper()
	return start(t, launch(t, opts(t, format, extra), "unused"))
}

// collected is a turn's events.
type collected struct{ adaptertest.Events }

func (c *collected) summary(t testing.TB) string {
	var parts []string
	for _, e := range c.All() {
		s := string(e.Type)
		switch e.Type {
		case wire.EventTextOutput:
			s += ":" + adaptertest.Data(t, e)["text"].(string)
		case wire.EventLLMChunk:
			s += ":" + adaptertest.Data(t, e)["content"].(string)
		case wire.EventToolCall:
			args, _ := json.Marshal(adaptertest.Data(t, e)["arguments"])
			s += ":" + adaptertest.Data(t, e)["tool_name"].(string) + string(args)
		case wire.EventToolResult:
			s += ":" + adaptertest.Data(t, e)["tool_name"].(string) + "=" + str(adaptertest.Data(t, e), "result")
			if adaptertest.Data(t, e)["error"] != nil {
				s += "!"
			}
		case wire.EventError:
			s += ":" + adaptertest.Data(t, e)["message"].(string)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

func turnCtx(ctx context.Context, a *Adapter, n int, msg string) (harness.TurnResult, *collected, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var c collected
	res, err := a.Turn(ctx, harness.TurnInput{Number: n, Message: msg, OutputLimit: 1 << 20}, c.Emit)
	return res, &c, err
}

func turn(t *testing.T, a *Adapter, n int, msg string) (harness.TurnResult, *collected) {
	t.Helper()
	res, c, err := turnCtx(context.Background(), a, n, msg)
	if err != nil {
		t.Fatalf("turn %d %q: %v", n, msg, err)
	}
	return res, c
}

func failure(t *testing.T, err error) *harness.Failure {
	t.Helper()
	f, ok := harness.AsFailure(err)
	if !ok {
		t.Fatalf("error %v is not a Failure", err)
	}
	return f
}

func TestResumeAcrossTurns(t *testing.T) {
	a := agent(t, FormatJSONL, nil)
	res, _ := turn(t, a, 1, "reply one")
	sid, _ := res.Extra["session_id"].(string)
	if res.Response != "one" || !strings.HasPrefix(sid, "ses-") {
		t.Fatalf("turn 1: %+v", res)
	}
	if st := res.Extra["exit"].(process.ExitStatus); st.Code != 0 {
		t.Fatalf("exit %v", st)
	}
	if !a.Alive() {
		t.Fatal("not alive between turns")
	}
	res, _ = turn(t, a, 2, "history")
	if res.Response != "history: reply one | history" || res.Extra["session_id"] != sid {
		t.Fatalf("turn 2: %+v", res)
	}
	res, _ = turn(t, a, 3, "count;;done")
	if res.Response != "turns: 3" || !res.Done {
		t.Fatalf("turn 3: %+v", res)
	}
	if err := a.Stop(context.Background()); err != nil || a.Alive() {
		t.Fatalf("stop: %v, alive %v", err, a.Alive())
	}
	if _, _, err := turnCtx(context.Background(), a, 4, "reply x"); failure(t, err).Type != wire.FailureHarnessExited {
		t.Fatalf("turn after stop: %v", err)
	}
}

func TestSessionByRegexOnStderr(t *testing.T) {
	// The text format prints "session id: ID" on stderr.
	a := agent(t, FormatText, map[string]any{"session_regex": `session id: (?P<session_id>ses-[0-9a-f]+)`})
	res, _ := turn(t, a, 1, "reply one\nreply two")
	if res.Response != "one\ntwo" {
		t.Fatalf("turn 1: %+v", res)
	}
	res, _ = turn(t, a, 2, "history")
	if res.Response != "history: reply one\nreply two | history" {
		t.Fatalf("turn 2: %q", res.Response)
	}
}

func TestSessionByField(t *testing.T) {
	// opencode lines carry the id at the top and in part; use the nested one.
	a := agent(t, FormatOpenCode, map[string]any{"session_field": "part.sessionID"})
	turn(t, a, 1, "reply one")
	res, _ := turn(t, a, 2, "history")
	if res.Response != "history: reply one | history" {
		t.Fatalf("turn 2: %q", res.Response)
	}
}

func TestNoSessionCaptured(t *testing.T) {
	a := agent(t, FormatText, nil) // no regex, and text has no field
	turn(t, a, 1, "reply one")
	_, _, err := turnCtx(context.Background(), a, 2, "history")
	if f := failure(t, err); f.Type != wire.FailureProtocol || !strings.Contains(f.Message, "session id") {
		t.Fatalf("%v", err)
	}
}

func TestMessageReachesProgramVerbatim(t *testing.T) {
	a := agent(t, FormatJSONL, nil)
	hostile := "argv\nit's \"double\" 'single' $(touch pwned) `touch pwned2` ; rm -rf / && echo $HOME\n" +
		"\ttab {session_id} {turn} {message} \\ back\\slash\n\n--resume evil -- --format text"
	res, _ := turn(t, a, 1, hostile)
	line, _, _ := strings.Cut(res.Response, "\n")
	var argv []string
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "argv: ")), &argv); err != nil {
		t.Fatalf("argv line %q: %v", line, err)
	}
	if len(argv) != 1 || argv[0] != hostile {
		t.Fatalf("program got %q\nwant one argument %q", argv, hostile)
	}
	// A message starting with "--" is echoed whole (no directive), after
	// the template's "--".
	dashes := "--resume x -- $(id) \"q\"\nnext line"
	res, _ = turn(t, a, 2, dashes)
	if res.Response != "echo: "+dashes {
		t.Fatalf("got %q", res.Response)
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(a.launch.Workspace, f)); err == nil {
			t.Fatalf("%s was created: the message went through a shell", f)
		}
	}
}

const directives = `reply hi;;think hmm;;tool add {"a":1};;error oops;;reply bye`

func TestFormatsOfTheFakeAgent(t *testing.T) {
	fail := "add failed: no MCP bridge configured"
	cases := []struct {
		format, events, response string
	}{
		{FormatJSONL,
			`text_output:hi | llm_chunk:hmm | tool_call:add{"a":1} | tool_result:add=no MCP bridge configured! | text_output:` + fail + ` | error:oops | text_output:bye`,
			"hi\n" + fail + "\nbye"},
		{FormatText,
			`text_output:hi | text_output:(thinking) hmm | text_output:[tool add {"a":1}] | text_output:[add -> no MCP bridge configured] | text_output:` + fail + ` | text_output:bye`,
			"hi\n(thinking) hmm\n[tool add {\"a\":1}]\n[add -> no MCP bridge configured]\n" + fail + "\nbye"},
		{FormatCodex,
			`text_output:hi | llm_chunk:hmm | tool_call:add{"a":1} | tool_result:add=! | text_output:` + fail + ` | error:oops | text_output:bye`,
			fail + "\nbye"},
		{FormatGemini,
			`llm_chunk:hi | text_output:hi | tool_call:mcp_env_add{"a":1} | tool_result:mcp_env_add=no MCP bridge configured! | llm_chunk:` + fail + ` | error:oops | llm_chunk:` + "\nbye" + ` | text_output:` + fail + "\nbye",
			fail + "\nbye"},
		{FormatOpenCode,
			`text_output:hi | llm_chunk:hmm | tool_call:env_add{"a":1} | tool_result:env_add=! | text_output:` + fail + ` | error:oops | text_output:bye`,
			fail + "\nbye"},
	}
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			a := agent(t, c.format, map[string]any{"session_regex": `session id: (\S+)`})
			res, ev := turn(t, a, 1, directives)
			if got := ev.summary(t); got != c.events {
				t.Errorf("events\n got %s\nwant %s", got, c.events)
			}
			if res.Response != c.response {
				t.Errorf("response %q, want %q", res.Response, c.response)
			}
			res, _ = turn(t, a, 2, "count")
			if res.Response != "turns: 2" {
				t.Errorf("not resumed: %q", res.Response)
			}
		})
	}
}

func TestFormatExtras(t *testing.T) {
	a := agent(t, FormatCodex, nil)
	res, _ := turn(t, a, 1, "reply hi")
	if u, ok := res.Extra["usage"].(map[string]any); !ok || u["output_tokens"] != float64(2) {
		t.Fatalf("codex usage %v", res.Extra)
	}
	a = agent(t, FormatOpenCode, nil)
	res, _ = turn(t, a, 1, `tool add {};;reply hi`)
	u, _ := res.Extra["usage"].(map[string]any)
	if res.Extra["steps"] != 2 || res.Extra["stop_reason"] != "stop" || u == nil || u["input"] != float64(10+len(`tool add {};;reply hi`)) {
		t.Fatalf("opencode extra %v", res.Extra)
	}
	a = agent(t, FormatGemini, nil)
	res, _ = turn(t, a, 1, "reply hi")
	if res.Extra["status"] != "success" || res.Extra["model"] != "testharness" || res.Extra["usage"] == nil {
		t.Fatalf("gemini extra %v", res.Extra)
	}
}

// recorded replays a file of real agent output through cat.
func recorded(t *testing.T, format, file string) (harness.TurnResult, *collected, *Adapter) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	a := start(t, launch(t, map[string]any{"format": format, "command": []string{"cat", path}}, "unused"))
	res, c := turn(t, a, 1, "call the echo tool")
	return res, c, a
}

func TestRecordedCodex(t *testing.T) {
	res, c, _ := recorded(t, FormatCodex, "codex.jsonl")
	want := "error:Model metadata for `mock-model` not found. Defaulting to fallback metadata; this can degrade performance and cause issues." +
		` | tool_call:harness_echo{"text":"ping"} | tool_result:harness_echo=ECHO:ping | text_output:MOCK-DONE after tool`
	if got := c.summary(t); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if res.Response != "MOCK-DONE after tool" || res.Extra["session_id"] != "01a22639-e370-7071-8828-2ae19ff4be4a" {
		t.Fatalf("%+v", res)
	}
	if u := res.Extra["usage"].(map[string]any); u["input_tokens"] != float64(22) || u["output_tokens"] != float64(14) {
		t.Fatalf("usage %v", u)
	}
	if adaptertest.Data(t, c.All()[1])["call_id"] != "item_1" || adaptertest.Data(t, c.All()[2])["call_id"] != "item_1" || adaptertest.Data(t, c.All()[1])["server"] != "harness" {
		t.Fatalf("call ids %v %v", adaptertest.Data(t, c.All()[1]), adaptertest.Data(t, c.All()[2]))
	}
}

func TestRecordedGemini(t *testing.T) {
	res, c, _ := recorded(t, FormatGemini, "gemini.jsonl")
	want := `tool_call:mcp_harness_harness_echo{"text":"ping"} | tool_result:mcp_harness_harness_echo=ECHO:ping | llm_chunk:MOCK-DONE after tool | text_output:MOCK-DONE after tool`
	if got := c.summary(t); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if res.Response != "MOCK-DONE after tool" || res.Extra["session_id"] != "96dd7af6-1c2b-4e0f-9a51-3f0c2d7e8b11" ||
		res.Extra["model"] != "mock-model" || res.Extra["status"] != "success" {
		t.Fatalf("%+v", res)
	}
	if u := res.Extra["usage"].(map[string]any); u["total_tokens"] != float64(36) || u["tool_calls"] != float64(1) {
		t.Fatalf("usage %v", u)
	}
}

func TestRecordedOpenCode(t *testing.T) {
	res, c, _ := recorded(t, FormatOpenCode, "opencode.jsonl")
	want := `tool_call:harness_harness_echo{"text":"ping"} | tool_result:harness_harness_echo=ECHO:ping | text_output:MOCK-DONE after tool`
	if got := c.summary(t); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if res.Response != "MOCK-DONE after tool" || res.Extra["session_id"] != "ses_dd9c51f0affeQ2b1" || res.Extra["stop_reason"] != "stop" {
		t.Fatalf("%+v", res)
	}
	u := res.Extra["usage"].(map[string]any)
	if u["total"] != float64(70) || u["input"] != float64(50) || u["cache"].(map[string]any)["read"] != float64(5) || res.Extra["cost"] != 0.001 {
		t.Fatalf("usage %v cost %v", u, res.Extra["cost"])
	}
}

func TestNonzeroExit(t *testing.T) {
	a := agent(t, FormatJSONL, nil)
	_, _, err := turnCtx(context.Background(), a, 1, "reply partial;;stderr last words;;exit 3")
	f := failure(t, err)
	if f.Type != wire.FailureHarnessCrashed || f.Exit == nil || f.Exit.Code != 3 || !strings.Contains(f.StderrTail, "last words") {
		t.Fatalf("%#v", f)
	}
	if exit, tail, pid := a.Diagnostics(); exit == nil || exit.Code != 3 || !strings.Contains(tail, "last words") || pid == 0 {
		t.Fatalf("diagnostics %v %q %d", exit, tail, pid)
	}
	_, _, err = turnCtx(context.Background(), a, 1, "crash 4")
	if f := failure(t, err); f.Type != wire.FailureHarnessCrashed || f.Exit.Code != 4 || !strings.Contains(f.StderrTail, "crashing with code 4") {
		t.Fatalf("%#v", f)
	}

	b := agent(t, FormatJSONL, map[string]any{"nonzero_ok": true})
	res, _ := turn(t, b, 1, "reply partial;;exit 3")
	if st := res.Extra["exit"].(process.ExitStatus); st.Code != 3 || res.Response != "partial" {
		t.Fatalf("nonzero_ok: %+v", res)
	}
	if exit, _, _ := b.Diagnostics(); exit != nil {
		t.Fatalf("exit reported for an accepted turn: %v", exit)
	}
	res, _ = turn(t, b, 2, "history")
	if res.Response != "history: reply partial;;exit 3 | history" {
		t.Fatalf("after nonzero: %q", res.Response)
	}
}

func (a *Adapter) turnPid() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur == nil || a.cur.p == nil {
		return 0
	}
	return a.cur.p.Pid()
}

// interrupt runs msg as a turn and interrupts it once the turn's process
// has printed some text (so its SIGINT handler is in place).
func interrupt(t *testing.T, a *Adapter, n int, msg string) harness.TurnResult {
	t.Helper()
	type out struct {
		res harness.TurnResult
		err error
	}
	done := make(chan out, 1)
	said := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		first := true
		res, err := a.Turn(ctx, harness.TurnInput{Number: n, Message: msg}, func(e wire.Event) {
			if e.Type == wire.EventTextOutput && first {
				first = false
				close(said)
			}
		})
		done <- out{res, err}
	}()
	select {
	case <-said:
	case o := <-done:
		t.Fatalf("turn ended before it said anything: %+v %v", o.res, o.err)
	}
	if err := a.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || !o.res.Cancelled {
		t.Fatalf("interrupted turn: %+v %v", o.res, o.err)
	}
	return o.res
}

func TestInterrupt(t *testing.T) {
	a := agent(t, FormatJSONL, nil)
	turn(t, a, 1, "reply one")
	// SIGINT ends the sleep; the agent saves the session and exits 130.
	res := interrupt(t, a, 2, "reply sleeping;;sleep 30s")
	if st := res.Extra["exit"].(process.ExitStatus); st.Code != 130 || res.Response != "sleeping" {
		t.Fatalf("%+v", res)
	}
	res, _ = turn(t, a, 3, "history")
	if res.Response != "history: reply one | reply sleeping;;sleep 30s | history" {
		t.Fatalf("after interrupt: %q", res.Response)
	}
	if err := a.Interrupt(context.Background()); !errors.Is(err, harness.ErrNoTurn) {
		t.Fatalf("interrupt between turns: %v, want ErrNoTurn", err)
	}
}

func TestInterruptKillsAfterGrace(t *testing.T) {
	// A program that ignores SIGINT is killed after the grace.
	script := `trap '' INT; echo before; exec sleep 30`
	a := start(t, launch(t, map[string]any{"interrupt_grace": "200ms", "command": []string{"sh", "-c", script, "sh", PhMessage}}, "unused"))
	res := interrupt(t, a, 1, "ignored")
	if st := res.Extra["exit"].(process.ExitStatus); st.Signal != "SIGKILL" || res.Response != "before" {
		t.Fatalf("%+v", res)
	}
}

func TestNothingOutlivesATurn(t *testing.T) {
	a := agent(t, FormatJSONL, nil)
	res, _ := turn(t, a, 1, "spawn;;reply started")
	f := strings.Fields(res.Response)
	pid, err := strconv.Atoi(f[1])
	if err != nil || f[0] != "spawned" {
		t.Fatalf("%q", res.Response)
	}
	if adaptertest.Alive(pid) {
		t.Fatalf("child %d of the turn still runs", pid)
	}
}

func TestStopKillsRunningTurn(t *testing.T) {
	a := agent(t, FormatJSONL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := turnCtx(ctx, a, 1, "sleep 30s")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	pid := a.turnPid()
	if pid == 0 || !adaptertest.Alive(pid) {
		t.Fatalf("abandoned turn process %d not running", pid)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if adaptertest.Alive(pid) {
		t.Fatal("turn process survived Stop")
	}
}

func TestOutputLimit(t *testing.T) {
	a := agent(t, FormatText, nil)
	ctx := context.Background()
	var c collected
	_, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "flood 2M", OutputLimit: 256 << 10}, c.Emit)
	if f := failure(t, err); f.Type != wire.FailureOutputLimit {
		t.Fatalf("%v", err)
	}
}

func TestProtocolErrorInJSONL(t *testing.T) {
	a := agent(t, FormatJSONL, nil)
	_, _, err := turnCtx(context.Background(), a, 1, "malformed")
	if f := failure(t, err); f.Type != wire.FailureProtocol {
		t.Fatalf("%v", err)
	}
}

func TestLaunchCommandAsPrefix(t *testing.T) {
	// Without options.command, Launch.Command is the prefix and the message
	// is appended as the last argument.
	th := testbin.Path(t, "testharness")
	a := start(t, launch(t, map[string]any{"format": "jsonl"}, th, "agent", "--protocol", "oneshot", "--"))
	res, _ := turn(t, a, 1, "argv")
	if res.Response != `argv: ["argv"]` {
		t.Fatalf("%q", res.Response)
	}
}

func TestStartFailures(t *testing.T) {
	l := launch(t, map[string]any{"command": []string{"no-such-agent-xyz", PhMessage}}, "unused")
	if f := failure(t, New().Start(context.Background(), l)); f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "not found") {
		t.Fatalf("%v", f)
	}
	l = launch(t, map[string]any{"command": []string{"cat"}, "formt": "text"}, "unused")
	if f := failure(t, New().Start(context.Background(), l)); f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "formt") {
		t.Fatalf("%v", f)
	}
}

func TestRestartForgetsSession(t *testing.T) {
	l := launch(t, opts(t, FormatJSONL, nil), "unused")
	a := start(t, l)
	turn(t, a, 1, "reply old episode")
	turn(t, a, 2, "count")
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	res, _ := turn(t, a, 1, "history")
	if res.Response != "history: history" {
		t.Fatalf("new episode sees the old session: %q", res.Response)
	}
}

func TestHarnessReceivesEpisodeAndWorkspace(t *testing.T) {
	l := launch(t, opts(t, FormatText, nil), "unused")
	l.EpisodeID = "ep-exec-env"
	a := start(t, l)
	msg, _ := adaptertest.EnvProbe(l)
	res, c := turn(t, a, 1, msg)
	adaptertest.CheckEnv(t, l, res.Response+"\n"+c.summary(t))
}
