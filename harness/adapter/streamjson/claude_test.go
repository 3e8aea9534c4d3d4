package streamjson

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { testbin.Cleanup(); os.Exit(code) }))
}

// launch describes the fake agent in stream-json mode with options opts and
// extra agent flags args (placed before the adapter's own flags).
func launch(t *testing.T, opts map[string]any, args ...string) *harness.Launch {
	t.Helper()
	l := adaptertest.Launch(t, append([]string{testbin.Path(t, "testharness"), "agent", "--protocol", "stream-json"}, args...)...)
	l.Options = opts
	return l
}

func startLaunch(t *testing.T, l *harness.Launch) *Adapter {
	t.Helper()
	a := New()
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop(context.Background()) })
	return a
}

func started(t *testing.T, opts map[string]any, args ...string) *Adapter {
	t.Helper()
	return startLaunch(t, launch(t, opts, args...))
}

// collected is a turn's events.
type collected struct{ adaptertest.Events }

func turn(t *testing.T, a *Adapter, n int, msg string) (harness.TurnResult, *collected, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var c collected
	res, err := a.Turn(ctx, harness.TurnInput{Number: n, Message: msg, OutputLimit: 1 << 20}, c.Emit)
	return res, &c, err
}

func failure(t *testing.T, err error) *harness.Failure {
	t.Helper()
	f, ok := harness.AsFailure(err)
	if !ok {
		t.Fatalf("error %v is not a Failure", err)
	}
	return f
}

func TestTurnsKeepContext(t *testing.T) {
	a := started(t, nil)
	res, _, err := turn(t, a, 1, "reply one")
	if err != nil || res.Response != "one" || res.Cancelled || res.Done {
		t.Fatalf("turn 1: %+v %v", res, err)
	}
	session := res.Extra["session_id"]
	if session == nil || session == "" || a.SessionID() != session {
		t.Fatalf("session id %v (adapter %q)", session, a.SessionID())
	}
	res, _, err = turn(t, a, 2, "history")
	if err != nil || res.Response != "history: reply one | history" {
		t.Fatalf("turn 2: %+v %v", res, err)
	}
	if res.Extra["session_id"] != session {
		t.Fatalf("session changed: %v -> %v", session, res.Extra["session_id"])
	}
}

func TestEventMapping(t *testing.T) {
	a := started(t, map[string]any{"model": "m-test", "permission_mode": "acceptEdits"})
	res, c, err := turn(t, a, 1, "reply first;;think pondering;;reply second")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(c.Types(), ","), "text_output,llm_chunk,text_output"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	if adaptertest.Data(t, c.All()[0])["text"] != "first" || c.All()[0].Origin != wire.OriginHarness {
		t.Fatalf("text event %+v", c.All()[0])
	}
	if d := adaptertest.Data(t, c.All()[1]); d["content"] != "pondering" || d["thought"] != true {
		t.Fatalf("thinking event %+v", d)
	}
	if res.Response != "first\nsecond" {
		t.Fatalf("response %q", res.Response)
	}
	x := res.Extra
	if x["model"] != "m-test" || x["permission_mode"] != "acceptEdits" || x["subtype"] != "success" ||
		x["num_turns"] != float64(1) || x["stop_reason"] != "end_turn" || x["is_error"] != false {
		t.Fatalf("extra %+v", x)
	}
	for _, k := range []string{"usage", "model_usage", "total_cost_usd", "duration_ms", "duration_api_ms", "tools", "agent_version"} {
		if x[k] == nil {
			t.Errorf("extra lacks %s: %+v", k, x)
		}
	}
	if u, _ := x["usage"].(map[string]any); u["input_tokens"] != float64(len("reply first;;think pondering;;reply second")) {
		t.Errorf("usage %+v", x["usage"])
	}
}

func TestPartialMessages(t *testing.T) {
	a := started(t, map[string]any{"include_partial_messages": true})
	res, c, err := turn(t, a, 1, "think deep thought;;reply hello big world")
	if err != nil || res.Response != "hello big world" {
		t.Fatalf("%+v %v", res, err)
	}
	var thought, text []string
	for _, e := range c.OfType(wire.EventLLMChunk) {
		if adaptertest.Data(t, e)["thought"] == true {
			thought = append(thought, adaptertest.Data(t, e)["content"].(string))
		} else {
			text = append(text, adaptertest.Data(t, e)["content"].(string))
		}
	}
	// Thinking is reported once, as deltas; text as deltas and as a whole.
	if strings.Join(thought, "|") != "deep |thought" || strings.Join(text, "|") != "hello |big |world" {
		t.Fatalf("thought %q text %q (events %v)", thought, text, c.Types())
	}
	if outs := c.OfType(wire.EventTextOutput); len(outs) != 1 || adaptertest.Data(t, outs[0])["text"] != "hello big world" {
		t.Fatalf("text_output %+v", outs)
	}
}

// mcpServer serves a tool "add" over streamable HTTP, checking the bearer
// token and recording Claude's _meta tool-use ids.
// toolUseIDs lists the claudecode/toolUseId _meta of the add calls srv got.
func toolUseIDs(srv *adaptertest.MCPServer) []string {
	var ids []string
	for _, req := range srv.Calls() {
		if req.Params.Meta != nil {
			if id, ok := req.Params.Meta.AdditionalFields["claudecode/toolUseId"].(string); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

func TestToolCallOverMCP(t *testing.T) {
	for _, style := range []string{StyleClaude, StyleQwen} {
		t.Run(style, func(t *testing.T) {
			srv := adaptertest.NewMCPServer(t, "tok")
			l := launch(t, map[string]any{"mcp_config_style": style})
			l.MCP = &harness.MCPInjection{ServerName: "env", URL: srv.URL, Token: "tok"}
			a := startLaunch(t, l)

			cfg, err := os.Stat(l.Home + "/" + mcpConfigFile)
			if err != nil || cfg.Mode().Perm() != 0o600 {
				t.Fatalf("MCP config file: %v %v", cfg, err)
			}
			res, c, err := turn(t, a, 1, `tool add {"a":2,"b":3}`)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(c.Types(), ","); got != "tool_call,tool_result,text_output" {
				t.Fatalf("events %s", got)
			}
			call, result := adaptertest.Data(t, c.All()[0]), adaptertest.Data(t, c.All()[1])
			args, _ := call["arguments"].(map[string]any)
			if call["tool_name"] != "mcp__env__add" || call["mcp_server"] != "env" || call["mcp_tool"] != "add" ||
				args["a"] != float64(2) || args["b"] != float64(3) || call["call_id"] == "" {
				t.Fatalf("tool_call %+v", call)
			}
			if result["tool_name"] != "mcp__env__add" || result["result"] != "5" || result["error"] != nil ||
				result["call_id"] != call["call_id"] {
				t.Fatalf("tool_result %+v", result)
			}
			if ids := toolUseIDs(srv); len(ids) != 1 || ids[0] != call["call_id"] {
				t.Fatalf("server saw tool-use ids %v, want [%v]", ids, call["call_id"])
			}
			if res.Response != "add -> 5" {
				t.Fatalf("response %q", res.Response)
			}
			servers, _ := res.Extra["mcp_servers"].([]mcpServer)
			if len(servers) != 1 || servers[0] != (mcpServer{Name: "env", Status: "connected"}) {
				t.Fatalf("mcp_servers %+v", res.Extra["mcp_servers"])
			}
			if tools, _ := res.Extra["tools"].([]string); !strings.Contains(strings.Join(tools, ","), "mcp__env__add") {
				t.Fatalf("tools %v", res.Extra["tools"])
			}

			if err := a.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(l.Home + "/" + mcpConfigFile); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("MCP config file left after Stop: %v", err)
			}
		})
	}
}

func TestWrongTokenReported(t *testing.T) {
	srv := adaptertest.NewMCPServer(t, "tok")
	l := launch(t, nil)
	l.Home = "" // inline --mcp-config
	l.MCP = &harness.MCPInjection{URL: srv.URL, Token: "wrong"}
	a := startLaunch(t, l)
	res, c, err := turn(t, a, 1, `tool add {"a":1,"b":1}`)
	if err != nil {
		t.Fatal(err)
	}
	errs := c.OfType(wire.EventError)
	if len(errs) != 1 || !strings.Contains(adaptertest.Data(t, errs[0])["message"].(string), `MCP server "env" is failed`) ||
		adaptertest.Data(t, errs[0])["recoverable"] != true {
		t.Fatalf("error events %+v", errs)
	}
	results := c.OfType(wire.EventToolResult)
	if len(results) != 1 || adaptertest.Data(t, results[0])["error"] == nil {
		t.Fatalf("tool results %+v", results)
	}
	if !strings.HasPrefix(res.Response, "add failed") {
		t.Fatalf("response %q", res.Response)
	}
}

// interruptTurn runs msg and interrupts it until the turn ends.
func interruptTurn(t *testing.T, a *Adapter, msg string) (harness.TurnResult, error) {
	t.Helper()
	done := make(chan struct{})
	var res harness.TurnResult
	var err error
	go func() {
		defer close(done)
		res, _, err = turn(t, a, 1, msg)
	}()
	for {
		if err := a.Interrupt(context.Background()); err != nil && !errors.Is(err, harness.ErrNoTurn) {
			t.Fatal(err)
		}
		select {
		case <-done:
			return res, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestInterrupt(t *testing.T) {
	a := started(t, nil)
	res, err := interruptTurn(t, a, "sleep 30s;;reply not reached")
	if err != nil || !res.Cancelled || res.Extra["subtype"] != "error_during_execution" {
		t.Fatalf("%+v %v", res, err)
	}
	if r, _, err := turn(t, a, 2, "reply still here"); err != nil || r.Response != "still here" || r.Cancelled {
		t.Fatalf("after interrupt: %+v %v", r, err)
	}
	// Without a running turn Interrupt does nothing.
	if err := a.Interrupt(context.Background()); !errors.Is(err, harness.ErrNoTurn) {
		t.Fatalf("interrupt between turns: %v, want ErrNoTurn", err)
	}
}

func TestAPIError(t *testing.T) {
	a := started(t, nil)
	_, c, err := turn(t, a, 1, "reply trying;;apierror 400 prompt is too long")
	f := failure(t, err)
	if f.Type != wire.FailureHarnessCrashed || f.Message != "API Error: 400: prompt is too long" ||
		f.Exit == nil || f.Exit.Code != 1 {
		t.Fatalf("failure %#v", f)
	}
	errs := c.OfType(wire.EventError)
	if len(errs) != 1 || adaptertest.Data(t, errs[0])["message"] != "API Error: 400 prompt is too long" {
		t.Fatalf("events %+v", c.All())
	}
}

func TestAgentLimitsEndTurnNormally(t *testing.T) {
	a := started(t, nil)
	res, _, err := turn(t, a, 1, "reply working;;maxturns 3")
	if err != nil || res.Extra["max_turns_reached"] != true || res.Extra["subtype"] != "error_max_turns" ||
		res.Response != "working" || res.Cancelled {
		t.Fatalf("max turns: %+v %v", res, err)
	}
	res, _, err = turn(t, a, 2, "maxbudget")
	if err != nil || res.Extra["max_budget_reached"] != true || res.Extra["max_turns_reached"] != nil {
		t.Fatalf("max budget: %+v %v", res, err)
	}
	if res, _, err := turn(t, a, 3, "reply on"); err != nil || res.Response != "on" {
		t.Fatalf("after limits: %+v %v", res, err)
	}
}

func TestOtherErrorResultIsReported(t *testing.T) {
	a := started(t, nil)
	res, c, err := turn(t, a, 1,
		`rawline {"type":"result","subtype":"error_during_execution","is_error":true,"errors":["boom","again"]}`)
	if err != nil || res.Cancelled || res.Extra["is_error"] != true {
		t.Fatalf("%+v %v", res, err)
	}
	errs := c.OfType(wire.EventError)
	if len(errs) != 1 || adaptertest.Data(t, errs[0])["message"] != "error_during_execution: boom; again" {
		t.Fatalf("events %+v", c.All())
	}
}

func TestPermissionRequestsAllowed(t *testing.T) {
	a := started(t, nil)
	res, _, err := turn(t, a, 1, "askperm Bash")
	if err != nil || res.Response != "permission Bash: allow" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestCrashMidTurn(t *testing.T) {
	a := started(t, nil)
	_, _, err := turn(t, a, 1, "stderr last words;;crash 3")
	f := failure(t, err)
	if f.Type != wire.FailureHarnessCrashed || f.Exit == nil || f.Exit.Code != 3 || !strings.Contains(f.StderrTail, "last words") {
		t.Fatalf("crash: %#v", f)
	}
	if a.Alive() {
		t.Fatal("alive after crash")
	}
}

func TestExitedBetweenTurns(t *testing.T) {
	a := started(t, nil)
	if res, _, err := turn(t, a, 1, "reply bye;;exit 5"); err != nil || res.Response != "bye" {
		t.Fatalf("%+v %v", res, err)
	}
	for a.Alive() {
		time.Sleep(5 * time.Millisecond)
	}
	_, _, err := turn(t, a, 2, "reply too late")
	if f := failure(t, err); f.Type != wire.FailureHarnessExited || f.Exit == nil || f.Exit.Code != 5 {
		t.Fatalf("%#v", f)
	}
}

func TestProtocolErrors(t *testing.T) {
	for _, msg := range []string{
		"malformed",
		`rawline {"no":"type"}`,
		`rawline {"type":"result","is_error":false}`,
		`rawline {"type":"assistant","message":{"content":5}}`,
		`rawline {"type":"user","message":"nope"}`,
	} {
		a := started(t, nil)
		_, _, err := turn(t, a, 1, msg)
		if f := failure(t, err); f.Type != wire.FailureProtocol {
			t.Errorf("%q: %v, want protocol_error", msg, err)
		}
	}
}

func TestNonJSONAndUnknownLines(t *testing.T) {
	a := started(t, nil)
	res, c, err := turn(t, a, 1, `garbage;;rawline {"type":"tool_progress","x":1};;rawline {"type":"system","subtype":"task_notification"};;reply fine`)
	if err != nil || res.Response != "fine" {
		t.Fatalf("%+v %v", res, err)
	}
	if got := strings.Join(c.Types(), ","); got != "text_output,text_output" || adaptertest.Data(t, c.All()[0])["text"] != "this is not json {{{" {
		t.Fatalf("events %+v", c.All())
	}
}

func TestOutputLimits(t *testing.T) {
	a := started(t, nil)
	if _, _, err := turn(t, a, 1, "flood 4M"); failure(t, err).Type != wire.FailureOutputLimit {
		t.Fatalf("flood: %v", err)
	}
	b := started(t, nil)
	_, err := b.Turn(context.Background(), harness.TurnInput{Number: 1, Message: "longline 3M"}, func(wire.Event) {})
	if f := failure(t, err); f.Type != wire.FailureOutputLimit || !strings.Contains(f.Message, "limit 1048576") {
		t.Fatalf("long line: %v", err)
	}
}

func TestTurnDeadline(t *testing.T) {
	a := started(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "hang"}, func(wire.Event) {})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want deadline", err)
	}
}

func TestStartupFailure(t *testing.T) {
	err := New().Start(context.Background(), launch(t, nil, "--crash-on-start", "4", "--stderr", "no api key"))
	f := failure(t, err)
	if f.Type != wire.FailureStartupFailed || f.Exit == nil || f.Exit.Code != 4 || !strings.Contains(f.StderrTail, "no api key") {
		t.Fatalf("crash on start: %#v", f)
	}

	l := launch(t, nil, "--never-ready")
	l.StartupTimeout = 200 * time.Millisecond
	f = failure(t, New().Start(context.Background(), l))
	if f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "did not become ready") {
		t.Fatalf("never ready: %#v", f)
	}

	// Without the protocol flags the agent refuses to run (as Claude would).
	f = failure(t, New().Start(context.Background(), launch(t, map[string]any{"protocol_flags": false})))
	if f.Type != wire.FailureStartupFailed || f.Exit == nil || f.Exit.Code != 1 || !strings.Contains(f.StderrTail, "--input-format") {
		t.Fatalf("no protocol flags: %#v", f)
	}

	l = launch(t, nil)
	l.Command = []string{"/nonexistent/claude"}
	if f := failure(t, New().Start(context.Background(), l)); f.Type != wire.FailureStartupFailed {
		t.Fatalf("missing program: %#v", f)
	}
}

func TestReadinessWithoutInitialize(t *testing.T) {
	// An agent that never answers initialize is ready once the wait ends.
	a := started(t, map[string]any{"initialize_timeout": "100ms"}, "--no-initialize")
	if res, _, err := turn(t, a, 1, "reply late init"); err != nil || res.Response != "late init" {
		t.Fatalf("%+v %v", res, err)
	}
	// With initialize off the agent is ready once alive after the settle time.
	b := started(t, map[string]any{"initialize": false}, "--noisy-start")
	res, c, err := turn(t, b, 1, "reply settled")
	if err != nil || res.Response != "settled" {
		t.Fatalf("%+v %v", res, err)
	}
	if len(c.All()) == 0 || adaptertest.Data(t, c.All()[0])["text"] != "testharness agent starting (not JSON)" {
		t.Fatalf("the banner printed before the turn opens it: %+v", c.All())
	}
}

func TestUnknownOption(t *testing.T) {
	if _, err := ParseOptions(map[string]any{"bogus": 1}); err == nil || !strings.Contains(err.Error(), `unknown key "bogus"`) {
		t.Fatalf("ParseOptions: %v", err)
	}
	if _, err := ParseOptions(map[string]any{"permision_mode": "x"}); err == nil || !strings.Contains(err.Error(), `did you mean "permission_mode"?`) {
		t.Fatalf("ParseOptions of a typo: %v", err)
	}
	cfg := &harness.Config{Adapter: Name, Command: []string{"claude"},
		Options: map[string]any{"mcp_config_style": "cursor"}}
	if _, err := Factory(cfg); err == nil || !strings.Contains(err.Error(), "mcp_config_style") {
		t.Fatalf("Factory: %v", err)
	}
	cfg.Options = map[string]any{"model": "x"}
	if a, err := Factory(cfg); err != nil || a == nil {
		t.Fatalf("Factory: %v", err)
	}
	f := failure(t, New().Start(context.Background(), launch(t, map[string]any{"extra_args": "--x"})))
	if f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "extra_args") {
		t.Fatalf("Start: %#v", f)
	}
}

func gone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }

func TestStopLeavesNoProcess(t *testing.T) {
	a := started(t, nil)
	res, _, err := turn(t, a, 1, "spawn")
	if err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Sscanf(res.Response, "spawned %d", &child); err != nil {
		t.Fatalf("response %q", res.Response)
	}
	_, _, pid := a.Diagnostics()
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) || !gone(child) || a.Alive() {
		t.Fatalf("left running: agent %d gone=%v, child %d gone=%v", pid, gone(pid), child, gone(child))
	}
	// End of input is a clean exit for the agent.
	if exit, _, _ := a.Diagnostics(); exit == nil || exit.Code != 0 || exit.Signaled() {
		t.Fatalf("exit %+v, want code 0 from end of input", exit)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := New().Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
}

func TestSandboxVariableForRootBypass(t *testing.T) {
	a := started(t, map[string]any{"permission_mode": "bypassPermissions"})
	res, _, err := turn(t, a, 1, "env IS_SANDBOX")
	want := "IS_SANDBOX=<unset>"
	if os.Geteuid() == 0 {
		want = "IS_SANDBOX=1"
	}
	if err != nil || res.Response != want {
		t.Fatalf("got %q, want %q (%v)", res.Response, want, err)
	}
}

func TestHarnessReceivesEpisodeAndWorkspace(t *testing.T) {
	l := launch(t, nil)
	l.EpisodeID = "ep-claude-env"
	a := startLaunch(t, l)
	msg, _ := adaptertest.EnvProbe(l)
	res, _, err := turn(t, a, 1, msg)
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckEnv(t, l, res.Response)
}
