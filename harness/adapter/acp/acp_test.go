package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
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

// launch starts from `testharness agent --protocol acp ARGS`.
func launch(t *testing.T, args ...string) *harness.Launch {
	t.Helper()
	l := adaptertest.Launch(t, append([]string{testbin.Path(t, "testharness"), "agent", "--protocol", "acp"}, args...)...)
	// Debug level runs every logging path; the output is not needed.
	l.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return l
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

func started(t *testing.T, args ...string) *Adapter {
	t.Helper()
	return start(t, launch(t, args...))
}

func withOptions(l *harness.Launch, opts map[string]any) *harness.Launch {
	l.Options = opts
	return l
}

// collected is a turn's events.
type collected struct{ adaptertest.Events }

func turn(t *testing.T, a *Adapter, n int, msg string) (harness.TurnResult, *collected, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var c collected
	res, err := a.Turn(ctx, harness.TurnInput{Number: n, Message: msg, OutputLimit: 1 << 20}, c.Emit)
	return res, &c, err
}

func mustTurn(t *testing.T, a *Adapter, n int, msg string) (harness.TurnResult, *collected) {
	t.Helper()
	res, c, err := turn(t, a, n, msg)
	if err != nil {
		t.Fatalf("turn %d %q: %v", n, msg, err)
	}
	for _, e := range c.All() {
		if e.Origin != wire.OriginHarness || !e.Type.Valid() {
			t.Fatalf("event %+v", e)
		}
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

// roundTrip makes v look like what JSON decoding gives, for comparisons.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTurnsKeepContext(t *testing.T) {
	a := started(t)
	res, _ := mustTurn(t, a, 1, "reply one")
	if res.Response != "one" || res.Cancelled || res.Done {
		t.Fatalf("turn 1: %+v", res)
	}
	info, ok := res.Extra["acp"].(map[string]any)
	if !ok || info["session_id"] != "testharness-session-1" || info["protocol_version"] != 1 ||
		info["agent_info"].(map[string]any)["name"] != "testharness" || info["mode"] != "default" {
		t.Fatalf("first turn acp facts: %#v", res.Extra["acp"])
	}
	if res.Extra["stop_reason"] != StopEndTurn {
		t.Fatalf("stop_reason %v", res.Extra["stop_reason"])
	}
	if u, ok := res.Extra["usage"].(map[string]any); !ok || u["totalTokens"] == nil {
		t.Fatalf("usage %#v", res.Extra["usage"])
	}
	if m, ok := res.Extra["meta"].(map[string]any); !ok || m["testharness"] == nil {
		t.Fatalf("meta %#v", res.Extra["meta"])
	}
	res, _ = mustTurn(t, a, 2, "history")
	if res.Response != "history: reply one | history" {
		t.Fatalf("turn 2: %q", res.Response)
	}
	if _, again := res.Extra["acp"]; again {
		t.Fatal("acp facts reported again on turn 2")
	}
	if got := a.Info(); got.SessionID != "testharness-session-1" || got.ProtocolVersion != 1 || got.MCPTransport != "" {
		t.Fatalf("Info %+v", got)
	}
}

func TestResponseFromChunks(t *testing.T) {
	a := started(t)
	res, c := mustTurn(t, a, 1, "reply hello big world;;emptychunk;;reply second line")
	if res.Response != "hello big world\nsecond line" {
		t.Fatalf("response %q", res.Response)
	}
	chunks := c.OfType(wire.EventLLMChunk)
	var joined strings.Builder
	for i, e := range chunks {
		if adaptertest.Data(t, e)["index"] != float64(i) {
			t.Fatalf("chunk %d has index %v", i, adaptertest.Data(t, e)["index"])
		}
		joined.WriteString(adaptertest.Data(t, e)["content"].(string))
	}
	// One chunk per word; the empty chunk makes no event.
	if len(chunks) != 5 || joined.String() != res.Response {
		t.Fatalf("chunks %+v", chunks)
	}
	if len(c.All()) != len(chunks) {
		t.Fatalf("events %+v", c.All())
	}
}

func TestThoughtAndPlan(t *testing.T) {
	a := started(t)
	res, c := mustTurn(t, a, 1, "think pondering;;plan step one|step two;;reply done")
	if res.Response != "done" {
		t.Fatalf("response %q", res.Response)
	}
	chunks := c.OfType(wire.EventLLMChunk)
	if len(chunks) != 3 {
		t.Fatalf("chunks %+v", chunks)
	}
	if d := adaptertest.Data(t, chunks[0]); d["content"] != "pondering" || d["thought"] != true || d["index"] != 0.0 {
		t.Fatalf("thought %+v", d)
	}
	plan, ok := adaptertest.Data(t, chunks[1])["plan"].([]any)
	if !ok || len(plan) != 2 || plan[1].(map[string]any)["content"] != "step two" || adaptertest.Data(t, chunks[1])["content"] != "" {
		t.Fatalf("plan %+v", adaptertest.Data(t, chunks[1]))
	}
	if d := adaptertest.Data(t, chunks[2]); d["content"] != "done" || d["thought"] != nil {
		t.Fatalf("text %+v", d)
	}
}

func TestToolCallThroughMCP(t *testing.T) {
	srv := adaptertest.NewMCPServer(t, "tok")
	seen := srv.Auth
	l := launch(t)
	l.MCP = srv.Injection()
	a := start(t, l)

	res, c := mustTurn(t, a, 1, `tool add {"a":2,"b":3}`)
	if res.Response != "add -> 5" {
		t.Fatalf("response %q", res.Response)
	}
	if res.Extra["acp"].(map[string]any)["mcp_transport"] != "http" {
		t.Fatalf("acp facts %#v", res.Extra["acp"])
	}
	calls, results := c.OfType(wire.EventToolCall), c.OfType(wire.EventToolResult)
	if len(calls) != 1 || len(results) != 1 {
		t.Fatalf("events %+v", c.All())
	}
	want := map[string]any{"tool_name": "add", "arguments": map[string]any{"a": 2.0, "b": 3.0}, "call_id": "call_1",
		"title": "add", "kind": "other", "status": "in_progress"}
	if !reflect.DeepEqual(adaptertest.Data(t, calls[0]), want) {
		t.Fatalf("tool_call %#v", adaptertest.Data(t, calls[0]))
	}
	if d := adaptertest.Data(t, results[0]); d["result"] != "5" || d["error"] != nil || d["status"] != "completed" || d["call_id"] != "call_1" || d["tool_name"] != "add" {
		t.Fatalf("tool_result %#v", d)
	}
	got := seen()
	if len(got) == 0 {
		t.Fatal("the MCP server saw no request")
	}
	for _, h := range got {
		if h != "Bearer tok" {
			t.Fatalf("Authorization headers %q", got)
		}
	}

	// The agent got the bridge in session/new, headers as a list.
	res, _ = mustTurn(t, a, 2, "acp new")
	var newReq struct {
		Cwd        string `json:"cwd"`
		MCPServers []any  `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(res.Response), &newReq); err != nil {
		t.Fatalf("%v: %s", err, res.Response)
	}
	wantServers := roundTrip(t, []any{map[string]any{"type": "http", "name": "env", "url": srv.URL,
		"headers": []any{map[string]any{"name": "Authorization", "value": "Bearer tok"}}}})
	if newReq.Cwd != l.Workspace || !reflect.DeepEqual(roundTrip(t, newReq.MCPServers), wantServers) {
		t.Fatalf("session/new params %s", res.Response)
	}

	// A failing tool call reports its error.
	_, c = mustTurn(t, a, 3, `tool nosuch {}`)
	results = c.OfType(wire.EventToolResult)
	if len(results) != 1 || adaptertest.Data(t, results[0])["status"] != "failed" || adaptertest.Data(t, results[0])["error"] == nil {
		t.Fatalf("failed tool %+v", c.All())
	}
}

func TestInitializeAndNoTools(t *testing.T) {
	a := started(t)
	res, _ := mustTurn(t, a, 1, "acp init;;acp new")
	lines := strings.Split(res.Response, "\n")
	if len(lines) != 2 {
		t.Fatalf("response %q", res.Response)
	}
	var init map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &init); err != nil {
		t.Fatal(err)
	}
	want := roundTrip(t, map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "harnessd", "version": ClientVersion},
	})
	if !reflect.DeepEqual(any(init), want) {
		t.Fatalf("initialize params %s", lines[0])
	}
	if !strings.Contains(lines[1], `"mcpServers":[]`) {
		t.Fatalf("session/new without tools: %s", lines[1])
	}
}

func TestPermissionPolicy(t *testing.T) {
	cases := []struct {
		name string
		opts map[string]any
		msg  string
		want []string // decisions
		text string
	}{
		{"allow by default", nil, "permission Bash: ls", []string{"allowed"},
			"permission Bash: ls: selected allow"},
		{"deny", map[string]any{"permission": "deny"}, "permission Bash: ls", []string{"denied"},
			"permission Bash: ls: selected reject"},
		{"deny patterns", map[string]any{"deny_patterns": []any{`rm -rf`, `^Danger`}},
			"permission Bash: rm -rf /;;permission Bash: ls;;permission Dangerous", []string{"denied", "allowed", "denied"},
			"permission Bash: rm -rf /: selected reject\npermission Bash: ls: selected allow\npermission Dangerous: selected reject"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := start(t, withOptions(launch(t), tc.opts))
			res, _ := mustTurn(t, a, 1, tc.msg)
			if res.Response != tc.text {
				t.Fatalf("response %q, want %q", res.Response, tc.text)
			}
			perms, _ := res.Extra["permissions"].([]wire.Permission)
			var got []string
			for _, p := range perms {
				got = append(got, p.Decision)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decisions %v, want %v (%#v)", got, tc.want, perms)
			}
		})
	}
}

func TestClientMethodsNotFound(t *testing.T) {
	a := started(t)
	res, _ := mustTurn(t, a, 1, `clientcall fs/read_text_file {"path":"/etc/hostname"};;clientcall terminal/create {"command":"ls"};;clientcall elicitation/create`)
	for _, line := range strings.Split(res.Response, "\n") {
		if !strings.Contains(line, "error -32601") {
			t.Fatalf("response %q", res.Response)
		}
	}
}

// interrupt starts msg as turn n and interrupts it until it returns.
// interrupt runs turn n and interrupts it once it is live and ready says
// the events so far are far enough along (nil: as soon as it is live).
func interrupt(t *testing.T, a *Adapter, n int, msg string, ready func([]wire.Event) bool) (harness.TurnResult, error) {
	t.Helper()
	done := make(chan struct{})
	var res harness.TurnResult
	var err error
	var c collected
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err = a.Turn(ctx, harness.TurnInput{Number: n, Message: msg, OutputLimit: 1 << 20}, c.Emit)
	}()
	for {
		// ErrNoTurn until the turn has sent its prompt: keep asking.
		if ready == nil || ready(c.All()) {
			if err := a.Interrupt(context.Background()); err != nil && !errors.Is(err, harness.ErrNoTurn) {
				t.Fatal(err)
			}
		}
		select {
		case <-done:
			return res, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestInterrupt(t *testing.T) {
	a := started(t)
	if err := a.Interrupt(context.Background()); !errors.Is(err, harness.ErrNoTurn) {
		t.Fatalf("interrupt between turns: %v, want ErrNoTurn", err)
	}
	// Interrupted once "before" has arrived: a cancel that overtook the
	// first directive would leave nothing to keep.
	saidBefore := func(events []wire.Event) bool {
		for _, e := range events {
			if c, ok := e.Data.(*wire.LLMChunk); ok && strings.Contains(c.Content, "before") {
				return true
			}
		}
		return false
	}
	res, err := interrupt(t, a, 1, "reply before;;sleep 30s;;reply not reached", saidBefore)
	if err != nil || !res.Cancelled || res.Extra["stop_reason"] != StopCancelled || res.Response != "before" {
		t.Fatalf("%+v %v", res, err)
	}
	res, _ = mustTurn(t, a, 2, "reply still here;;history")
	if res.Response != "still here\nhistory: reply before;;sleep 30s;;reply not reached | reply still here;;history" {
		t.Fatalf("after interrupt: %q", res.Response)
	}
}

func TestCancelledPromptAnsweredWithError(t *testing.T) {
	a := started(t)
	res, err := interrupt(t, a, 1, "rpcerror -32800 request cancelled;;sleep 30s", nil)
	if err != nil || !res.Cancelled || !strings.Contains(fmt.Sprint(res.Extra["error"]), "-32800") {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestPermissionAfterCancel(t *testing.T) {
	a := started(t)
	res, err := interrupt(t, a, 1, "cancelperm Bash", nil)
	if err != nil || !res.Cancelled || res.Response != "permission Bash: cancelled" {
		t.Fatalf("%+v %v", res, err)
	}
	perms, _ := res.Extra["permissions"].([]wire.Permission)
	if len(perms) != 1 || perms[0].Decision != "cancelled" {
		t.Fatalf("permissions %#v", res.Extra["permissions"])
	}
}

func TestCrashMidTurn(t *testing.T) {
	a := started(t)
	_, _, err := turn(t, a, 1, "reply before;;stderr last words;;crash 3")
	f := failure(t, err)
	if f.Type != wire.FailureHarnessCrashed || f.Exit == nil || f.Exit.Code != 3 || !strings.Contains(f.StderrTail, "last words") {
		t.Fatalf("crash: %#v", f)
	}
	if a.Alive() {
		t.Fatal("alive after crash")
	}
	_, _, err = turn(t, a, 2, "reply again")
	if f := failure(t, err); f.Type != wire.FailureHarnessExited || f.Exit == nil || f.Exit.Code != 3 {
		t.Fatalf("turn after crash: %#v", f)
	}
}

func TestOutputClosedMidTurn(t *testing.T) {
	a := started(t)
	_, _, err := turn(t, a, 1, "reply before;;closeout")
	if f := failure(t, err); f.Type != wire.FailureProtocol || !strings.Contains(f.Message, "stopped talking") {
		t.Fatalf("%#v", f)
	}
}

func TestRPCErrorFailsTurn(t *testing.T) {
	a := started(t)
	_, _, err := turn(t, a, 1, "reply partial;;rpcerror -32603 model overloaded")
	f := failure(t, err)
	var rerr *RPCError
	if f.Type != wire.FailureProtocol || !strings.Contains(f.Message, "model overloaded") ||
		!errors.As(err, &rerr) || rerr.Code != -32603 {
		t.Fatalf("%#v", f)
	}
}

func TestGarbageIsIgnored(t *testing.T) {
	a := started(t, "--noisy-start")
	msg := strings.Join([]string{
		"garbage", "malformed", "badevent",
		`rawline {"jsonrpc":"2.0","id":999,"result":{}}`,
		`rawline {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"other","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`,
		`rawline {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"testharness-session-1","update":{"sessionUpdate":"agent_message_chunk","content":7}}}`,
		`rawline {"jsonrpc":"2.0","method":"something/else"}`,
		`update {"sessionUpdate":"available_commands_update","availableCommands":[]}`,
		`update {"sessionUpdate":"no_such_kind"}`,
		"reply fine",
	}, ";;")
	res, c := mustTurn(t, a, 1, msg)
	if res.Response != "fine" || len(c.All()) != 1 {
		t.Fatalf("%q %+v", res.Response, c.All())
	}
}

func TestToolUpdateShapes(t *testing.T) {
	a := started(t)
	msg := strings.Join([]string{
		// Announced pending without input, then input, then done with rawOutput only.
		`update {"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read file","status":"pending"}`,
		`update {"sessionUpdate":"tool_call_update","toolCallId":"t1","rawInput":{"path":"a.txt"},"status":"in_progress"}`,
		`update {"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","rawOutput":{"bytes":3}}`,
		`update {"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}`,
		// Reported already failed, with a name.
		`update {"sessionUpdate":"tool_call","toolCallId":"t2","title":"Run","name":"bash","status":"failed","content":[{"type":"content","content":{"type":"text","text":"exit 1"}}]}`,
		// Never announced.
		`update {"sessionUpdate":"tool_call_update","toolCallId":"t3","title":"Late","status":"completed"}`,
		`update {"sessionUpdate":"usage_update","used":100,"size":1000}`,
	}, ";;")
	res, c := mustTurn(t, a, 1, msg)
	calls, results := c.OfType(wire.EventToolCall), c.OfType(wire.EventToolResult)
	if len(calls) != 3 || len(results) != 3 {
		t.Fatalf("events %+v", c.All())
	}
	if d := adaptertest.Data(t, calls[0]); d["tool_name"] != "Read file" || !reflect.DeepEqual(d["arguments"], map[string]any{}) || d["status"] != "pending" {
		t.Fatalf("t1 call %#v", d)
	}
	if d := adaptertest.Data(t, results[0]); !reflect.DeepEqual(d["result"], map[string]any{"bytes": 3.0}) || d["error"] != nil ||
		!reflect.DeepEqual(d["arguments"], map[string]any{"path": "a.txt"}) {
		t.Fatalf("t1 result %#v", d)
	}
	if adaptertest.Data(t, calls[1])["tool_name"] != "bash" || adaptertest.Data(t, results[1])["error"] != "exit 1" || adaptertest.Data(t, results[1])["status"] != "failed" {
		t.Fatalf("t2 %#v %#v", adaptertest.Data(t, calls[1]), adaptertest.Data(t, results[1]))
	}
	if adaptertest.Data(t, calls[2])["call_id"] != "t3" || adaptertest.Data(t, results[2])["tool_name"] != "Late" {
		t.Fatalf("t3 %#v %#v", adaptertest.Data(t, calls[2]), adaptertest.Data(t, results[2]))
	}
	if !reflect.DeepEqual(res.Extra["usage_update"], map[string]any{"used": 100.0, "size": 1000.0}) {
		t.Fatalf("usage_update %#v", res.Extra["usage_update"])
	}
}

func TestOutputLimits(t *testing.T) {
	a := started(t)
	if _, _, err := turn(t, a, 1, "flood 4M"); failure(t, err).Type != wire.FailureOutputLimit {
		t.Fatalf("flood: %v", err)
	}
	b := started(t)
	_, _, err := turn(t, b, 1, "longline 3M")
	if f := failure(t, err); f.Type != wire.FailureOutputLimit || !strings.Contains(f.Message, "limit 1048576") {
		t.Fatalf("long line: %v", err)
	}
}

func TestTurnDeadline(t *testing.T) {
	a := started(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "hang"}, func(wire.Event) {})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want deadline", err)
	}
}

func TestStartupFailure(t *testing.T) {
	err := New().Start(context.Background(), launch(t, "--crash-on-start", "4", "--stderr", "no api key"))
	f := failure(t, err)
	if f.Type != wire.FailureStartupFailed || f.Exit == nil || f.Exit.Code != 4 || !strings.Contains(f.StderrTail, "no api key") {
		t.Fatalf("crash on start: %#v", f)
	}

	l := launch(t, "--never-ready", "--stderr", "waiting for login")
	// Long enough for the agent to have written its stderr on a loaded machine.
	l.StartupTimeout = 2 * time.Second
	err = New().Start(context.Background(), l)
	if f := failure(t, err); f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "did not become ready") ||
		!strings.Contains(f.StderrTail, "waiting for login") {
		t.Fatalf("never ready: %#v", f)
	}

	l = withOptions(launch(t, "--never-ready"), map[string]any{"initialize_timeout": "200ms"})
	err = New().Start(context.Background(), l)
	if f := failure(t, err); f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "initialize_timeout") {
		t.Fatalf("initialize timeout: %#v", f)
	}
}

func TestOptionsAreStrict(t *testing.T) {
	err := New().Start(context.Background(), withOptions(launch(t), map[string]any{"permision": "deny"}))
	if f := failure(t, err); f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, `unknown key "permision" (did you mean "permission"?`) {
		t.Fatalf("%#v", f)
	}
	for _, bad := range []map[string]any{
		{"permission": "maybe"},
		{"deny_patterns": []any{"("}},
		{"deny_patterns": "rm"},
		{"mode": 3},
		{"initialize_timeout": "soon"},
		{"mcp_stdio_command": []any{}},
	} {
		if _, err := ParseOptions(bad); err == nil {
			t.Errorf("ParseOptions(%v) accepted", bad)
		}
	}
	o, err := ParseOptions(map[string]any{"initialize_timeout": 2, "deny_patterns": []any{"x"}, "mode": "yolo"})
	if err != nil || o.InitializeTimeout.D() != 2*time.Second || o.Permission != PermissionAllow {
		t.Fatalf("%+v %v", o, err)
	}
	cfg := &harness.Config{Adapter: Name, Command: []string{"x"}, Options: map[string]any{"nope": 1}}
	if _, err := Factory(cfg); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("Factory with a bad option: %v", err)
	}
	cfg.Options = nil
	if ad, err := Factory(cfg); err != nil {
		t.Fatal(err)
	} else if _, ok := ad.(*Adapter); !ok {
		t.Fatalf("Factory gave %T", ad)
	}
}

func TestAgentWithoutHTTPMCP(t *testing.T) {
	mcpCfg := &harness.MCPInjection{ServerName: "env", URL: "http://127.0.0.1:1/mcp", Token: "tok"}
	l := launch(t, "--acp-no-http")
	l.MCP = mcpCfg
	err := New().Start(context.Background(), l)
	if f := failure(t, err); f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "mcp_stdio_command") {
		t.Fatalf("%#v", f)
	}

	l = withOptions(launch(t, "--acp-no-http"), map[string]any{"mcp_stdio_command": []any{"mcp-proxy", "--stdio"}})
	l.MCP = mcpCfg
	a := start(t, l)
	if a.Info().MCPTransport != "stdio" {
		t.Fatalf("info %+v", a.Info())
	}
	res, _ := mustTurn(t, a, 1, "acp new")
	want := `"mcpServers":[{"name":"env","command":"mcp-proxy","args":["--stdio"],"env":[{"name":"HARNESSD_MCP_URL","value":"http://127.0.0.1:1/mcp"},{"name":"HARNESSD_MCP_TOKEN","value":"tok"}]}]`
	if !strings.Contains(res.Response, want) {
		t.Fatalf("session/new %s", res.Response)
	}
}

func TestAuthentication(t *testing.T) {
	err := New().Start(context.Background(), launch(t, "--acp-auth", "key"))
	if f := failure(t, err); f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "requires authentication") {
		t.Fatalf("%#v", f)
	}
	err = New().Start(context.Background(), withOptions(launch(t, "--acp-auth", "key"), map[string]any{"auth_method": "other"}))
	if f := failure(t, err); f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "not offered") {
		t.Fatalf("%#v", f)
	}
	a := start(t, withOptions(launch(t, "--acp-auth", "key"), map[string]any{"auth_method": "key"}))
	if a.Info().AuthMethod != "key" {
		t.Fatalf("info %+v", a.Info())
	}
	if res, _ := mustTurn(t, a, 1, "reply in"); res.Response != "in" {
		t.Fatalf("%q", res.Response)
	}
}

func TestMode(t *testing.T) {
	a := start(t, withOptions(launch(t), map[string]any{"mode": "yolo"}))
	if res, _ := mustTurn(t, a, 1, "acp mode"); res.Response != "mode: yolo" || a.Info().Mode != "yolo" {
		t.Fatalf("%q %+v", res.Response, a.Info())
	}
	err := New().Start(context.Background(), withOptions(launch(t), map[string]any{"mode": "turbo"}))
	if f := failure(t, err); f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, `mode "turbo" is not offered`) {
		t.Fatalf("%#v", f)
	}
}

func gone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }

func TestStopLeavesNoProcess(t *testing.T) {
	for _, args := range [][]string{nil, {"--ignore-eof", "--ignore-term"}} {
		l := launch(t, args...)
		l.StopGrace = 100 * time.Millisecond
		a := New()
		if err := a.Start(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		res, _ := mustTurn(t, a, 1, "spawn")
		var child int
		if _, err := fmt.Sscanf(res.Response, "spawned %d", &child); err != nil {
			t.Fatalf("%q: %v", res.Response, err)
		}
		_, _, pid := a.Diagnostics()
		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := a.Stop(context.Background()); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		if !gone(pid) || !gone(child) || a.Alive() {
			t.Fatalf("%v: agent %d or child %d left after Stop", args, pid, child)
		}
	}
	if err := New().Stop(context.Background()); err != nil {
		t.Fatalf("Stop of an idle adapter: %v", err)
	}
}

func TestHarnessReceivesEpisodeAndWorkspace(t *testing.T) {
	l := launch(t)
	l.EpisodeID = "ep-acp-env"
	a := start(t, l)
	msg, _ := adaptertest.EnvProbe(l)
	res, _, err := turn(t, a, 1, msg)
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckEnv(t, l, res.Response)
}
