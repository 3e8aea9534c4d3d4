package session_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/acp"
	"github.com/harnessd/harnessd/harness/adapter/jsonl"
	"github.com/harnessd/harnessd/harness/adapter/streamjson"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// Tests of the environment's event queue (events:): each runs the real
// test agent (line protocol or ACP) and the real tool server.

// eventConfig is testConfig with events, normalized.
func eventConfig(t *testing.T, events []config.EventConfig, agentArgs ...string) *config.Config {
	t.Helper()
	cfg := testConfig(t, agentArgs...)
	cfg.Events = events
	return cfg
}

// acpConfig runs the test agent over ACP.
func acpConfig(t *testing.T, events []config.EventConfig, agentArgs ...string) *config.Config {
	cfg := eventConfig(t, events, append([]string{"--protocol", "acp"}, agentArgs...)...)
	cfg.Harness.Adapter = acp.Name
	return cfg
}

// claudeConfig runs the test agent over Claude Code's stream-json, taking
// mid-turn input when midTurn is set (harness.options.mid_turn_input).
func claudeConfig(t *testing.T, events []config.EventConfig, midTurn bool) *config.Config {
	cfg := eventConfig(t, events, "--protocol", "stream-json", "--queue-mid-turn")
	cfg.Harness.Adapter = streamjson.Name
	cfg.Harness.Options = map[string]any{"mid_turn_input": midTurn}
	return cfg
}

// newEventSession is newSession with the jsonl and acp adapters.
func newEventSession(t *testing.T, cfg *config.Config) *session.Session {
	t.Helper()
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	r := &harness.Registry{}
	if err := r.Add(jsonl.Name, jsonl.Factory); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(acp.Name, acp.Factory); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(streamjson.Name, streamjson.Factory); err != nil {
		t.Fatal(err)
	}
	s, err := session.NewSession(session.Options{Config: cfg, Adapters: r, Supervisor: supervisor(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// envEvents returns the env_event payloads among evs.
func envEvents(evs []wire.Event) []*wire.EnvEvent {
	var out []*wire.EnvEvent
	for _, e := range evs {
		if p, ok := e.Data.(*wire.EnvEvent); ok {
			if e.Origin != wire.OriginDaemon {
				panic("an env_event not from the daemon")
			}
			out = append(out, p)
		}
	}
	return out
}

func response(obs *wire.Observation) string {
	if obs.Metadata.Response == nil {
		return ""
	}
	return *obs.Metadata.Response
}

func ok(t *testing.T, obs *wire.Observation) {
	t.Helper()
	if obs.Done || obs.Metadata.ErrorType != "" {
		t.Fatalf("turn failed: %s %s", obs.Metadata.ErrorType, obs.Metadata.Error)
	}
}

func TestEventBeforeTurnTwoJoinsTurnTwosMessage(t *testing.T) {
	cfg := eventConfig(t, []config.EventConfig{
		{Name: "follow-up", BeforeTurn: 2, Message: "the user adds: also cover the empty input"},
	})
	cfg.RecordDir = t.TempDir()
	s := newEventSession(t, cfg)
	reset(t, s)
	o1 := step(t, s, "history")
	ok(t, o1)
	if strings.Contains(response(o1), "empty input") || len(envEvents(o1.Metadata.TurnEvents)) != 0 {
		t.Fatalf("turn 1 has the event: %q", response(o1))
	}
	o2 := step(t, s, "history")
	ok(t, o2)
	// history says every user message the harness received.
	if want := "history | history\n\nthe user adds: also cover the empty input"; !strings.Contains(response(o2), want) {
		t.Fatalf("turn 2's message lacks the event: %q", response(o2))
	}
	evs := envEvents(o2.Metadata.TurnEvents)
	if len(evs) != 1 || evs[0].Trigger != wire.TriggerBeforeTurn || evs[0].Effect != wire.EffectMessage ||
		evs[0].Delivery != wire.DeliveryNextMessage || evs[0].Name != "follow-up" || evs[0].Detail != "turn 2" {
		t.Fatalf("turn 2's env_event: %+v", evs)
	}
	o3 := step(t, s, "count")
	ok(t, o3)
	if len(envEvents(o3.Metadata.TurnEvents)) != 0 || response(o3) != "turns: 3" {
		t.Fatalf("turn 3: %q %+v", response(o3), envEvents(o3.Metadata.TurnEvents))
	}
	// The record file has it, as its own event type.
	files, _ := filepath.Glob(filepath.Join(cfg.RecordDir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("record files: %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"type":"env_event"`); n != 1 || !strings.Contains(string(b), `"trigger":"before_turn"`) {
		t.Fatalf("the record file has %d env_events:\n%s", n, b)
	}
}

// A tool call on the bridge triggers a deliver effect, which reaches the
// harness during the turn: the agent's waitevent returns it (and without
// it says "no event" after its wait).
func TestToolCallEventLandsMidTurn(t *testing.T) {
	ev := []config.EventConfig{{Name: "ci", AfterTool: &config.ToolPattern{Name: "ad*", Arguments: `"a":1\b`}, Deliver: "CI failed on main"}}
	for _, tc := range []struct {
		name string
		cfg  *config.Config
	}{
		{"line protocol", eventConfig(t, ev)},
		{"acp", acpConfig(t, ev, "--acp-prompt-queueing")},
		{"stream-json", claudeConfig(t, ev, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newEventSession(t, tc.cfg)
			reset(t, s)
			// Arguments that do not match: no event.
			o := step(t, s, `tool add {"a":10,"b":2};;waitevent 300ms`)
			ok(t, o)
			if !strings.Contains(response(o), "no event") || len(envEvents(o.Metadata.TurnEvents)) != 0 {
				t.Fatalf("a non-matching call fired the event: %q", response(o))
			}
			o = step(t, s, `tool add {"a":1,"b":2};;waitevent 20s;;reply after`)
			ok(t, o)
			if !strings.Contains(response(o), "add -> 3\nevent: CI failed on main\nafter") {
				t.Fatalf("the event did not land mid-turn: %q", response(o))
			}
			evs := envEvents(o.Metadata.TurnEvents)
			if len(evs) != 1 || evs[0].Trigger != wire.TriggerAfterTool || evs[0].Detail != "add" ||
				evs[0].Delivery != wire.DeliveryMidTurn || evs[0].Fallback != "" || evs[0].Text != "CI failed on main" {
				t.Fatalf("env_event: %+v", evs)
			}
			// Recorded after the bridge's result of the call, before the
			// turn's end.
			var order []string
			for _, e := range o.Metadata.TurnEvents {
				if e.Origin == wire.OriginBridge || e.Type == wire.EventEnv || e.Type == wire.EventTurnComplete {
					order = append(order, string(e.Type))
				}
			}
			if strings.Join(order, " ") != "tool_call tool_result env_event turn_complete" {
				t.Errorf("event order: %v", order)
			}
			// once (the default): a second matching call fires nothing,
			// and the next message does not repeat the text.
			o = step(t, s, `tool add {"a":1,"b":5};;waitevent 300ms;;history`)
			ok(t, o)
			if len(envEvents(o.Metadata.TurnEvents)) != 0 || !strings.Contains(response(o), "no event") {
				t.Fatalf("the event fired twice: %q", response(o))
			}
			if strings.Contains(response(o), "CI failed") {
				t.Fatalf("the delivered text came again with a message: %q", response(o))
			}
		})
	}
}

// An ACP agent that does not queue prompts cannot take input mid-turn: the
// text joins the next turn's message and the record says why.
func TestDeliverFallsBackToTheNextMessage(t *testing.T) {
	s := newEventSession(t, acpConfig(t, []config.EventConfig{{AfterTool: &config.ToolPattern{Name: "add"}, Deliver: "CI failed on main"}}))
	reset(t, s)
	o := step(t, s, `tool add {"a":1,"b":2};;waitevent 300ms`)
	ok(t, o)
	if !strings.Contains(response(o), "no event") {
		t.Fatalf("delivered mid-turn to an agent without prompt queueing: %q", response(o))
	}
	evs := envEvents(o.Metadata.TurnEvents)
	if len(evs) != 1 || evs[0].Delivery != wire.DeliveryNextMessage || !strings.Contains(evs[0].Fallback, "cannot take input during a turn") {
		t.Fatalf("env_event: %+v", evs)
	}
	o = step(t, s, "history")
	ok(t, o)
	if !strings.Contains(response(o), "| history\n\nCI failed on main") {
		t.Fatalf("turn 2's message lacks the fallen-back text: %q", response(o))
	}
}

// The stream-json adapter delivers mid-turn only when told to
// (mid_turn_input): without it the text waits for the next message.
func TestStreamJSONDeliversOnlyWhenAllowed(t *testing.T) {
	s := newEventSession(t, claudeConfig(t, []config.EventConfig{{AfterTool: &config.ToolPattern{Name: "add"}, Deliver: "CI failed on main"}}, false))
	reset(t, s)
	o := step(t, s, `tool add {"a":1,"b":2};;waitevent 300ms`)
	ok(t, o)
	evs := envEvents(o.Metadata.TurnEvents)
	if !strings.Contains(response(o), "no event") || len(evs) != 1 || evs[0].Delivery != wire.DeliveryNextMessage || evs[0].Fallback == "" {
		t.Fatalf("delivered without mid_turn_input: %q %+v", response(o), evs)
	}
	o = step(t, s, "history")
	ok(t, o)
	if !strings.Contains(response(o), "history\n\nCI failed on main") {
		t.Fatalf("turn 2's message: %q", response(o))
	}
}

// after: a wall-clock delay into the turn.
func TestEventAfterADelayLandsMidTurn(t *testing.T) {
	s := newEventSession(t, eventConfig(t, []config.EventConfig{{After: units.Duration(200 * time.Millisecond), Deliver: "a new email arrived", Once: new(false)}}))
	reset(t, s)
	for n := 1; n <= 2; n++ {
		o := step(t, s, "waitevent 20s")
		ok(t, o)
		if response(o) != "event: a new email arrived" {
			t.Fatalf("turn %d: %q", n, response(o))
		}
		if evs := envEvents(o.Metadata.TurnEvents); len(evs) != 1 || evs[0].Trigger != wire.TriggerAfter || evs[0].Detail != "200ms" {
			t.Fatalf("turn %d: %+v", n, evs)
		}
	}
	// A turn shorter than the delay: nothing fires.
	o := step(t, s, "count")
	ok(t, o)
	if len(envEvents(o.Metadata.TurnEvents)) != 0 {
		t.Fatalf("a short turn fired the timer: %+v", envEvents(o.Metadata.TurnEvents))
	}
}

// response_matches places a file in the workspace; the effect is confined
// to it: a link the harness planted is not followed (positive control: the
// same effect on a plain path lands).
func TestResponseMatchesPlacesAFile(t *testing.T) {
	s := newEventSession(t, eventConfig(t, []config.EventConfig{
		{Name: "ci-log", ResponseMatches: `(?i)\bready\b`, File: &config.FileEffect{Path: "ci/result.txt", Content: "FAIL test_empty\n"}},
		{Name: "trap", ResponseMatches: `linked`, File: &config.FileEffect{Path: "out/escape.txt", Content: "escaped\n"}},
	}))
	reset(t, s)
	o := step(t, s, "pwd")
	ok(t, o)
	ws := strings.TrimSpace(response(o))
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	o = step(t, s, "reply not yet")
	ok(t, o)
	if _, err := os.Stat(filepath.Join(ws, "ci")); err == nil || len(envEvents(o.Metadata.TurnEvents)) != 0 {
		t.Fatal("fired without a matching response")
	}
	o = step(t, s, "reply Ready for review")
	ok(t, o)
	evs := envEvents(o.Metadata.TurnEvents)
	if len(evs) != 1 || evs[0].Trigger != wire.TriggerResponseMatches || evs[0].Effect != wire.EffectFile || evs[0].Error != "" || evs[0].Path != "ci/result.txt" {
		t.Fatalf("env_event: %+v", evs)
	}
	b, err := os.ReadFile(filepath.Join(ws, "ci", "result.txt"))
	if err != nil || string(b) != "FAIL test_empty\n" {
		t.Fatalf("the file effect: %q %v", b, err)
	}
	// The harness sees it in its workspace in the next turn.
	o = step(t, s, "reply linked")
	ok(t, o)
	evs = envEvents(o.Metadata.TurnEvents)
	if len(evs) != 1 || !strings.Contains(evs[0].Error, "symbolic link") {
		t.Fatalf("the effect through a planted link: %+v", evs)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("the file effect followed the link: %v", ents)
	}
}

// A tool effect calls one of the environment's own tool servers, changing
// its state before the turn; the harness then sees the changed state.
func TestToolEffectChangesToolServerState(t *testing.T) {
	s := newEventSession(t, eventConfig(t, []config.EventConfig{{BeforeTurn: 2, Tool: &config.ToolEffect{Server: "calc", Name: "count"}}}))
	reset(t, s)
	o := step(t, s, "tool count")
	ok(t, o)
	if !strings.Contains(response(o), "count -> 1") {
		t.Fatalf("turn 1: %q", response(o))
	}
	o = step(t, s, "tool count")
	ok(t, o)
	if !strings.Contains(response(o), "count -> 3") {
		t.Fatalf("the tool effect did not reach the server: %q", response(o))
	}
	evs := envEvents(o.Metadata.TurnEvents)
	if len(evs) != 1 || evs[0].Effect != wire.EffectTool || evs[0].Tool != "calc/count" || evs[0].Result != "2" || evs[0].Error != "" {
		t.Fatalf("env_event: %+v", evs)
	}
}

// The empty queue is a static environment: a configuration with events: []
// gives the same observations as one without the key, the harness gets the
// trainer's messages exactly, and no env_event appears.
func TestEmptyQueueChangesNothing(t *testing.T) {
	script := []string{"history", `tool add {"a":1,"b":2};;waitevent 200ms`, "reply done;;history"}
	run := func(cfg *config.Config) []string {
		s := newEventSession(t, cfg)
		reset(t, s)
		var out []string
		for _, m := range script {
			o := step(t, s, m)
			ok(t, o)
			out = append(out, normalized(t, o))
			if len(envEvents(o.Metadata.TurnEvents)) != 0 {
				t.Fatalf("an env_event without events: %s", out[len(out)-1])
			}
		}
		return out
	}
	without := run(testConfig(t))
	empty, err := config.ParseConfig([]byte("harness: {command: [x]}\nevents: []\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	withEmpty := testConfig(t)
	withEmpty.Events = empty.Events
	got := run(withEmpty)
	if !reflect.DeepEqual(without, got) {
		t.Fatalf("observations differ:\n%v\n%v", without, got)
	}
	if !strings.Contains(without[2], `history | tool add {\"a\":1,\"b\":2};;waitevent 200ms | reply done;;history`) {
		t.Fatalf("the harness did not get the messages as sent: %s", without[2])
	}
}

// normalized is an observation's JSON without what differs between runs
// (times, ids, durations).
func normalized(t *testing.T, o *wire.Observation) string {
	t.Helper()
	o.Metadata.EpisodeID = ""
	// The harness's account and the bridge's of one tool call arrive
	// concurrently: each source's events keep their order, the sources'
	// interleaving is a race (seen under load).
	sort.SliceStable(o.Metadata.TurnEvents, func(i, j int) bool {
		return o.Metadata.TurnEvents[i].Origin < o.Metadata.TurnEvents[j].Origin
	})
	for i := range o.Metadata.TurnEvents {
		e := &o.Metadata.TurnEvents[i]
		e.Timestamp = 0
		if r, ok := e.Data.(*wire.ToolResult); ok {
			r.DurationMS = nil
			r.CallID = ""
		}
		if c, ok := e.Data.(*wire.ToolCall); ok {
			c.CallID = ""
		}
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Bad events are refused, each problem naming its key.
func TestBadEventsAreRefused(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"events: [{message: hi}]", "events[0]: a trigger is required"},
		{"events: [{before_turn: 1}]", "events[0]: an effect is required"},
		{"events: [{before_turn: 1, after: 1s, message: hi}]", "events[0]: exactly one trigger is allowed, not before_turn and after"},
		{"events: [{before_turn: 1, message: hi, deliver: hi}]", "exactly one effect is allowed, not message and deliver"},
		{"events: [{before_turn: -1, message: hi}]", "before_turn must be a turn number from 1"},
		{"events: [{name: x, response_matches: '(', message: hi}]", `events[0] "x": response_matches is not a valid regular expression`},
		{"events: [{after_tool: {arguments: a}, message: hi}]", "after_tool.name is required"},
		{"events: [{after_tool: {name: a, arguments: '['}, message: hi}]", "after_tool.arguments is not a valid regular expression"},
		{"events: [{before_turn: 1, file: {path: ../x, content: y}}]", "file.path \"../x\" must not contain .."},
		{"events: [{before_turn: 1, file: {path: /etc/x, content: y}}]", "file.path \"/etc/x\" must be relative to the workspace"},
		{"events: [{before_turn: 1, tool: {server: nope, name: t}}]", "tool.server \"nope\" is not one of the configured tools"},
		{"events: [{before_turn: 1, tool: {server: calc}}]", "tool.name is required"},
		{"events: [{before_turn: 1, tool: {server: calc, name: t, result: reply}}]", `tool.result must be message or deliver, not "reply"`},
		{"events: [{before_turn: 1, mesage: hi}]", "unknown key mesage"},
		{"events: [{}, {before_turn: 2, message: ok}, {after: 1s}]", "events[2]: an effect is required"},
	} {
		_, err := config.ParseConfig([]byte("harness: {command: [x]}\ntools: [{name: calc, command: [y]}]\n"+tc.yaml+"\n"), "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
	cfg, err := config.ParseConfig([]byte("harness: {command: [x]}\ntools: [{name: calc, command: [y]}]\nevents:\n"+
		"  - {after_tool: run_*, deliver: CI failed}\n  - {before_turn: 2, tool: {server: calc, name: count, arguments: {n: 1}}}\n"), "")
	if err != nil {
		t.Fatalf("a good configuration refused: %v", err)
	}
	if cfg.Events[0].AfterTool.Name != "run_*" || cfg.Events[0].Describe() != "after a tool call matching run_*: deliver a message mid-turn (else with the next turn)" {
		t.Fatalf("after_tool as a bare name: %+v %s", cfg.Events[0].AfterTool, cfg.Events[0].Describe())
	}
}

// A mid-turn event's text enters the next model call's prompt: the
// training export lists the event and marks that prompt span, whose tokens
// hold the text.
func TestMidTurnEventInTheExportsSpans(t *testing.T) {
	_, url := engine(t)
	cfg := engineConfig(t, url)
	cfg.Events = []config.EventConfig{{Name: "ci", AfterTool: &config.ToolPattern{Name: "add"}, Deliver: "CI failed on main"}}
	s := newEventSession(t, cfg)
	reset(t, s)
	o := step(t, s, `llm first question;;tool add {"a":1,"b":2};;waitevent 20s;;llm second question`)
	ok(t, o)
	if !strings.Contains(response(o), "event: CI failed on main") || strings.Contains(response(o), "llm error") {
		t.Fatalf("turn: %q", response(o))
	}
	ex, err := s.Export("")
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Events) != 1 || ex.Events[0].Seq != 1 || ex.Events[0].Turn != 1 || ex.Events[0].AfterCall != 1 || ex.Events[0].CallIndex != 2 ||
		ex.Events[0].Delivery != wire.DeliveryMidTurn || ex.Events[0].Text != "CI failed on main" {
		t.Fatalf("export events: %+v", ex.Events)
	}
	if len(ex.Chains) != 1 {
		t.Fatalf("chains: %+v", ex.Chains)
	}
	marked := 0
	for _, sp := range ex.Chains[0].Spans {
		if len(sp.Events) == 0 {
			continue
		}
		marked++
		if sp.Kind != "prompt" || sp.CallIndex != 2 || !reflect.DeepEqual(sp.Events, []int{1}) {
			t.Fatalf("marked span: %+v", sp)
		}
		var text strings.Builder
		for _, id := range ex.Chains[0].InputIDs[sp.Start:sp.End] {
			if id >= fakellm.EngineByteBase {
				text.WriteRune(rune(id - fakellm.EngineByteBase))
			}
		}
		if !strings.Contains(text.String(), "CI failed on main") {
			t.Fatalf("the marked span's tokens lack the event's text: %q", text.String())
		}
	}
	if marked != 1 {
		t.Fatalf("%d spans marked: %+v", marked, ex.Chains[0].Spans)
	}
}

// A tool server can author events: a tool effect with result: takes the
// tool's result text as the event's text, delivered mid-turn or appended
// to the next message; a stateful server decides what each says.
func TestToolServerAuthorsEventText(t *testing.T) {
	s := newEventSession(t, eventConfig(t, []config.EventConfig{
		{Name: "ci", AfterTool: &config.ToolPattern{Name: "add"},
			Tool: &config.ToolEffect{Server: "calc", Name: "echo", Arguments: map[string]any{"text": "CI: 2 tests failed"}, Result: config.ResultDeliver}},
		{Name: "counter", ResponseMatches: `^hi`, Once: new(false),
			Tool: &config.ToolEffect{Server: "calc", Name: "count", Result: config.ResultMessage}},
	}))
	reset(t, s)
	o := step(t, s, `tool add {"a":1,"b":2};;waitevent 20s`)
	ok(t, o)
	if !strings.Contains(response(o), "event: CI: 2 tests failed") {
		t.Fatalf("the tool's text was not delivered mid-turn: %q", response(o))
	}
	if evs := envEvents(o.Metadata.TurnEvents); len(evs) != 1 || evs[0].Delivery != wire.DeliveryMidTurn || evs[0].Text != "CI: 2 tests failed" || evs[0].Tool != "calc/echo" {
		t.Fatalf("env_event: %+v", evs)
	}
	for n, want := range []string{"1", "2"} {
		o = step(t, s, "reply hi")
		ok(t, o)
		if evs := envEvents(o.Metadata.TurnEvents); len(evs) != 1 || evs[0].Text != want || evs[0].Delivery != wire.DeliveryNextMessage {
			t.Fatalf("reply %d: %+v", n, evs)
		}
	}
	o = step(t, s, "history")
	ok(t, o)
	if !strings.Contains(response(o), "| reply hi | reply hi\n\n1 | history\n\n2") {
		t.Fatalf("the counter's texts did not join the next messages: %q", response(o))
	}
}
