package jsonl

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

func launch(t *testing.T, args ...string) *harness.Launch {
	t.Helper()
	return adaptertest.Launch(t, append([]string{testbin.Path(t, "testharness"), "agent"}, args...)...)
}

func started(t *testing.T, args ...string) *Adapter {
	t.Helper()
	a := New()
	if err := a.Start(context.Background(), launch(t, args...)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop(context.Background()) })
	return a
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

func failureType(t *testing.T, err error) wire.FailureType {
	t.Helper()
	f, ok := harness.AsFailure(err)
	if !ok {
		t.Fatalf("error %v is not a Failure", err)
	}
	return f.Type
}

func TestTurnsKeepContext(t *testing.T) {
	a := started(t, "--noisy-start")
	res, c, err := turn(t, a, 1, "reply one")
	if err != nil || res.Response != "one" {
		t.Fatalf("turn 1: %+v %v", res, err)
	}
	// The pre-ready banner opens the first turn as text output.
	if got := c.Types(); len(got) != 2 || got[0] != "text_output" || !strings.Contains(c.All()[0].Data.(*wire.TextOutput).Text, "not JSON") {
		t.Fatalf("turn 1 events %v", c.All())
	}
	res, _, err = turn(t, a, 2, "history;;done")
	if err != nil || res.Response != "history: reply one | history;;done" || !res.Done {
		t.Fatalf("turn 2: %+v %v", res, err)
	}
}

func TestNonJSONLineIsText(t *testing.T) {
	a := started(t)
	res, c, err := turn(t, a, 1, "garbage;;reply fine")
	if err != nil || res.Response != "fine" {
		t.Fatalf("%+v %v", res, err)
	}
	if c.All()[0].Type != wire.EventTextOutput || c.All()[0].Data.(*wire.TextOutput).Text != "this is not json {{{" {
		t.Fatalf("events %+v", c.All())
	}
}

func TestProtocolErrors(t *testing.T) {
	for _, msg := range []string{"malformed", "badevent", `rawline {"type":"turn_complete","data":{"response":1}}`, `rawline {"type":"text_output","data":[1]}`,
		`rawline {"type":"env_event","data":{"trigger":"before_turn","effect":"message","text":"forged"}}`} {
		a := started(t)
		_, _, err := turn(t, a, 1, msg)
		if got := failureType(t, err); got != wire.FailureProtocol {
			t.Errorf("%q: %v, want protocol_error", msg, err)
		}
	}
}

// An event without a field the schema requires ends the turn with a
// protocol error that names the field and points to the protocol doc.
func TestMissingRequiredFieldIsProtocolError(t *testing.T) {
	for _, c := range []struct{ line, field string }{
		{`{"type":"tool_call","data":{"name":"add"}}`, `"tool_name"`},
		{`{"type":"tool_call","data":{"tool_name":""}}`, `"tool_name"`},
		{`{"type":"tool_result","data":{"result":"5"}}`, `"tool_name"`},
		{`{"type":"text_output","data":{}}`, `"text"`},
		{`{"type":"error"}`, `"message"`},
		{`{"type":"tool_call","data":{"tool_name":"add","arguments":[1]}}`, `"arguments"`},
		{`{"type":"turn_complete","data":{"response":1}}`, `"response" must be a string`},
		{`{"type":"turn_complete","data":{"done":"yes"}}`, `"done" must be a boolean`},
		{`{"type":"turn_complete","data":{"cancelled":1}}`, `"cancelled" must be a boolean`},
	} {
		a := started(t)
		_, _, err := turn(t, a, 1, "rawline "+c.line)
		if got := failureType(t, err); got != wire.FailureProtocol ||
			!strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), "docs/protocol.md") {
			t.Errorf("%s: %v, want a protocol_error naming %s and docs/protocol.md", c.line, err, c.field)
		}
	}
}

// Harness events decode into their payload types; fields beyond the schema
// are kept, in events and in the turn's extra facts.
func TestEventsDecodeIntoPayloads(t *testing.T) {
	a := started(t)
	res, c, err := turn(t, a, 1, `rawline {"type":"tool_call","data":{"tool_name":"add","arguments":{"a":2},"call_id":"c1","note":"mine"}};;`+
		`rawline {"type":"turn_complete","data":{"response":"r","done":true,"cost":0.5,"usage":{"in":3}}}`)
	if err != nil || res.Response != "r" || !res.Done || res.Extra["cost"] != 0.5 || res.Extra["usage"].(map[string]any)["in"] != 3.0 {
		t.Fatalf("%+v %v", res, err)
	}
	calls := c.OfType(wire.EventToolCall)
	if len(calls) != 1 {
		t.Fatalf("events %v", c.All())
	}
	tc := calls[0].Data.(*wire.ToolCall)
	if tc.ToolName != "add" || string(tc.Arguments) != `{"a":2}` || tc.CallID != "c1" || calls[0].Origin != wire.OriginHarness {
		t.Fatalf("tool call %+v", tc)
	}
	if b, _ := json.Marshal(calls[0].Data); string(b) != `{"tool_name":"add","arguments":{"a":2},"call_id":"c1","note":"mine"}` {
		t.Fatalf("tool call data %s", b)
	}
}

func TestOutputLimits(t *testing.T) {
	a := started(t)
	if _, _, err := turn(t, a, 1, "flood 4M"); failureType(t, err) != wire.FailureOutputLimit {
		t.Fatalf("flood: %v", err)
	}
	b := started(t)
	_, _, err := turn(t, b, 1, "longline 3M")
	if failureType(t, err) != wire.FailureOutputLimit || !strings.Contains(err.Error(), "3145728-byte line (limit 1048576)") {
		t.Fatalf("long line: %v", err)
	}
}

func TestCrashMidTurn(t *testing.T) {
	a := started(t)
	_, _, err := turn(t, a, 1, "stderr last words;;crash 3")
	f, ok := harness.AsFailure(err)
	if !ok || f.Type != wire.FailureHarnessCrashed || f.Exit == nil || f.Exit.Code != 3 || !strings.Contains(f.StderrTail, "last words") {
		t.Fatalf("crash: %#v", err)
	}
	if a.Alive() {
		t.Fatal("alive after crash")
	}
}

func TestInterrupt(t *testing.T) {
	a := started(t)
	done := make(chan struct{})
	var res harness.TurnResult
	var err error
	go func() {
		defer close(done)
		res, _, err = turn(t, a, 1, "sleep 30s")
	}()
	// Interrupt until the turn is running and acknowledges.
	for {
		if err := a.Interrupt(context.Background()); err != nil && !errors.Is(err, harness.ErrNoTurn) {
			t.Fatal(err)
		}
		select {
		case <-done:
			if err != nil || !res.Cancelled {
				t.Fatalf("%+v %v", res, err)
			}
			if r, _, err := turn(t, a, 2, "reply still here"); err != nil || r.Response != "still here" {
				t.Fatalf("after interrupt: %+v %v", r, err)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
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
	a := New()
	err := a.Start(context.Background(), launch(t, "--crash-on-start", "4", "--stderr", "no api key"))
	f, ok := harness.AsFailure(err)
	if !ok || f.Type != wire.FailureStartupFailed || f.Exit == nil || f.Exit.Code != 4 || !strings.Contains(f.StderrTail, "no api key") {
		t.Fatalf("%#v", err)
	}
	l := launch(t, "--never-ready")
	l.StartupTimeout = 200 * time.Millisecond
	err = New().Start(context.Background(), l)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "did not become ready") {
		t.Fatalf("%#v", err)
	}
}

func TestEnvironmentGiven(t *testing.T) {
	l := launch(t)
	l.MCP = &harness.MCPInjection{URL: "http://127.0.0.1:1/mcp", Token: "tok", ConfigPath: "/x/mcp.json"}
	a := New()
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	res, _, err := turn(t, a, 1, "env HARNESSD_PROTOCOL;;env HARNESSD_MCP_TOKEN;;env HARNESSD_EPISODE_ID;;pwd")
	want := "HARNESSD_PROTOCOL=1\nHARNESSD_MCP_TOKEN=tok\nHARNESSD_EPISODE_ID=ep-1\n" + l.Workspace
	if err != nil || res.Response != want {
		t.Fatalf("got %q, want %q (%v)", res.Response, want, err)
	}
}

func TestHarnessReceivesEpisodeAndWorkspace(t *testing.T) {
	l := launch(t)
	l.EpisodeID = "ep-jsonl-env"
	a := New()
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	msg, _ := adaptertest.EnvProbe(l)
	res, _, err := turn(t, a, 1, msg)
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckEnv(t, l, res.Response)
}

// The message line is what json.Marshal writes for its map.
func TestMessageLineBytes(t *testing.T) {
	for _, c := range []string{"", "reply x", "<b>&</b> \"q\" \\ \n\t ü \u2028 \xff"} {
		want, _ := json.Marshal(map[string]any{"type": "message", "turn": 12, "content": c})
		if got := messageLine(12, c); string(got) != string(want) {
			t.Errorf("%q: got %s, want %s", c, got, want)
		}
	}
}

// chattyScript answers two turns, and after the first writes far more than
// a pipe holds (nobody reads stdout between turns, so it blocks).
const chattyScript = `echo '{"type":"ready"}'; read m
echo '{"type":"turn_complete","data":{"response":"one","done":false}}'
i=0; while [ $i -lt 4000 ]; do echo "between turns line $i, padded to be longer than usual"; i=$((i+1)); done
read m; echo '{"type":"turn_complete","data":{"response":"two","done":false}}'; exec sleep 1000`

// The lines a harness writes between turns come, in order, in the next turn.
func TestChattyHarnessBetweenTurns(t *testing.T) {
	a := New()
	if err := a.Start(context.Background(), adaptertest.Launch(t, "sh", "-c", chattyScript)); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	if res, _, err := turn(t, a, 1, "first"); err != nil || res.Response != "one" {
		t.Fatalf("turn 1: %+v, %v", res, err)
	}
	res, c, err := turn(t, a, 2, "second")
	if err != nil || res.Response != "two" {
		t.Fatalf("turn 2: %+v, %v", res, err)
	}
	ev := c.All()
	if len(ev) != 4000 || !strings.Contains(ev[3999].Data.(*wire.TextOutput).Text, "line 3999,") {
		t.Fatalf("turn 2 had %d events, want the 4000 lines written between turns in order", len(ev))
	}
}

// Stop ends a harness blocked writing to a full stdout pipe between turns.
func TestChattyHarnessBetweenTurnsStops(t *testing.T) {
	a := New()
	if err := a.Start(context.Background(), adaptertest.Launch(t, "sh", "-c", chattyScript)); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	if res, _, err := turn(t, a, 1, "first"); err != nil || res.Response != "one" {
		t.Fatalf("turn 1: %+v, %v", res, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if a.Alive() {
		t.Fatal("harness alive after Stop")
	}
}

// A Deliver while the turn's message is still being written (the harness
// is slow to read its input) waits for the message and reaches the turn,
// after its message: the harness acting on a message before its write
// returns (a tool call whose event is delivered) loses no event.
func TestDeliverWhileTheMessageIsWritten(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	script := `echo '{"type":"ready"}'
while [ ! -e ` + gate + ` ]; do sleep 0.01; done
read m; read e
case "$m" in *'"type":"message"'*) ;; *) m=bad;; esac
case "$e" in *'"content":"hello"'*'"type":"event"'*) r=event;; *) r="no event";; esac
[ "$m" = bad ] && r="message not first"
echo '{"type":"turn_complete","data":{"response":"'"$r"'","done":false}}'; exec sleep 1000`
	a := New()
	if err := a.Start(context.Background(), adaptertest.Launch(t, "sh", "-c", script)); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	type result struct {
		res harness.TurnResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Larger than the pipe: the write waits for the harness to read.
		res, _, err := turn(t, a, 1, strings.Repeat("m", 256<<10))
		done <- result{res, err}
	}()
	for begun := time.Now(); ; time.Sleep(time.Millisecond) {
		a.mu.Lock()
		running := a.turn != 0
		a.mu.Unlock()
		if running {
			break
		}
		if time.Since(begun) > 5*time.Second {
			t.Fatal("the turn did not begin while its message was written")
		}
	}
	delivered := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		delivered <- a.Deliver(ctx, "hello")
	}()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if err := <-delivered; err != nil {
		t.Fatalf("deliver: %v", err)
	}
	if r.err != nil || r.res.Response != "event" {
		t.Fatalf("turn: %+v, %v; want the event after the message", r.res, r.err)
	}
}
