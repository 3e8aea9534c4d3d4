package atif_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/internal/atif"
	"github.com/harnessd/harnessd/wire"
)

func ev(turn int, at float64, o wire.Origin, p wire.Payload) wire.Record {
	return wire.Record{Kind: wire.RecordEvent, Time: at, Event: &wire.Event{Type: p.EventType(), Timestamp: at, Data: p, Turn: turn, Origin: o}}
}

// The mapping's corners, on a record written by hand: a harness whose
// model calls the gateway did not see (tool calls with no model call
// before them get an agent step without llm_call_count), a harness's own
// built-in tool (kept, marked harness) beside its account of an
// environment tool (left out: the bridge's is the record), a reward and
// an error.
func TestConvertMapsTheCorners(t *testing.T) {
	msg, reward, fail := "fix it", 1.0, "no such file"
	recs := []wire.Record{
		{Kind: wire.RecordReset, Time: 100, EpisodeID: "ep", Agent: "claude-code", Adapter: "claude", Tools: []string{"add"}},
		{Kind: wire.RecordMessage, Time: 101, Turn: 1, Content: &msg},
		ev(1, 102, wire.OriginHarness, &wire.ToolCall{ToolName: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`), CallID: "toolu_1"}),
		ev(1, 103, wire.OriginHarness, &wire.ToolResult{ToolName: "Bash", Result: "a.txt", CallID: "toolu_1"}),
		ev(1, 104, wire.OriginHarness, &wire.ToolCall{ToolName: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`), CallID: "toolu_2"}),
		ev(1, 104.5, wire.OriginBridge, &wire.ToolCall{ToolName: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`), CallID: "b-1"}),
		ev(1, 105, wire.OriginBridge, &wire.ToolResult{ToolName: "add", Result: map[string]any{"sum": 3}, CallID: "b-1"}),
		ev(1, 105.5, wire.OriginHarness, &wire.ToolResult{ToolName: "add", Result: "3", CallID: "toolu_2"}),
		ev(1, 106, wire.OriginHarness, &wire.ToolCall{ToolName: "Read", Arguments: json.RawMessage(`null`)}),
		ev(1, 106.5, wire.OriginHarness, &wire.ToolResult{ToolName: "Read", Error: &fail}),
		ev(1, 107, wire.OriginHarness, &wire.Error{Message: "retrying", Recoverable: true}),
		ev(1, 108, wire.OriginHarness, &wire.TurnComplete{Response: "fixed", Done: true}),
		{Kind: wire.RecordObservation, Time: 109, Turn: 1, Observation: &wire.Observation{Reward: &reward, Done: true}},
	}
	tr, err := atif.Convert(recs, nil, atif.Options{AgentVersion: "2.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(tr)
	if p := validate(t, b); len(p) != 0 {
		t.Fatalf("does not validate: %v\n%s", p, b)
	}
	if len(tr.Steps) != 2 || tr.Steps[0].Source != "user" || tr.Steps[1].Source != "agent" {
		t.Fatalf("steps: %s", b)
	}
	a := tr.Steps[1]
	if a.LLMCallCount != nil || a.Metrics != nil || a.Message != "fixed" {
		t.Errorf("the agent step of a turn without gateway calls: %s", b)
	}
	var names []string
	for _, c := range a.ToolCalls {
		names = append(names, c.FunctionName+"/"+c.Extra["origin"].(string))
	}
	if got := strings.Join(names, ","); got != "Bash/harness,add/bridge,Read/harness" {
		t.Errorf("tool calls %s", got)
	}
	if string(a.ToolCalls[2].Arguments) != "{}" || a.ToolCalls[2].ToolCallID == "" {
		t.Errorf("a call without id or arguments: %+v", a.ToolCalls[2])
	}
	res := a.Observation.Results
	if len(res) != 3 || *res[1].Content != `{"sum":3}` || res[1].SourceCallID != "b-1" || res[2].Extra["error"] != fail {
		t.Errorf("results: %s", b)
	}
	if a.Extra["reward"] != 1.0 || a.Extra["done"] != true || a.Extra["errors"] == nil {
		t.Errorf("step extra: %v", a.Extra)
	}
	if tr.Agent.Name != "claude-code" || tr.Agent.Version != "2.1.0" || tr.FinalMetrics.TotalSteps != 2 || tr.FinalMetrics.TotalPromptTokens != nil {
		t.Errorf("root: %s", b)
	}
	if tr.Steps[0].Timestamp != "1970-01-01T00:01:41.000000Z" {
		t.Errorf("timestamp %q", tr.Steps[0].Timestamp)
	}
}

func TestConvertRefusesWhatIsNotOneEpisode(t *testing.T) {
	msg := "x"
	for name, recs := range map[string][]wire.Record{
		"empty":        nil,
		"no reset":     {{Kind: wire.RecordMessage, Turn: 1, Content: &msg}},
		"two episodes": {{Kind: wire.RecordReset, EpisodeID: "a"}, {Kind: wire.RecordReset, EpisodeID: "b"}},
	} {
		if _, err := atif.Convert(recs, nil, atif.Options{}); err == nil {
			t.Errorf("%s: converted", name)
		}
	}
}

// Without gateway calls, a harness's own llm_response is an agent step
// (llm_call_count not tracked: it may sum several calls); with them, the
// gateway's are the only ones. Thought chunks are the step's reasoning;
// a Chat Completions request's tools are the agent's tool definitions.
func TestConvertModelCallsByOrigin(t *testing.T) {
	msg := "go"
	tools := json.RawMessage(`[{"type":"function","function":{"name":"add","parameters":{"type":"object"}}}]`)
	base := []wire.Record{
		{Kind: wire.RecordReset, Time: 1, EpisodeID: "ep", Config: "c"},
		{Kind: wire.RecordMessage, Time: 2, Turn: 1, Content: &msg},
		ev(1, 3, wire.OriginHarness, &wire.LLMResponse{Content: "harness says", Usage: &wire.TokenUsage{PromptTokens: 7, CompletionTokens: 2}}),
		ev(1, 4, wire.OriginHarness, &wire.LLMChunk{Content: "let me ", Thought: true}),
		ev(1, 4.5, wire.OriginHarness, &wire.LLMChunk{Content: "think", Thought: true}),
	}
	tr, err := atif.Convert(base, nil, atif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(tr)
	if p := validate(t, b); len(p) != 0 {
		t.Fatalf("does not validate: %v\n%s", p, b)
	}
	if len(tr.Steps) != 2 || tr.Steps[1].Message != "harness says" || tr.Steps[1].LLMCallCount != nil ||
		*tr.Steps[1].Metrics.PromptTokens != 7 || tr.Steps[1].Reasoning != "let me think" || *tr.FinalMetrics.TotalPromptTokens != 7 {
		t.Errorf("harness model call: %s", b)
	}
	withGateway := append(base[:len(base):len(base)],
		ev(1, 5, wire.OriginGateway, &wire.LLMRequest{CallIndex: 1, Dialect: "openai-chat", Tools: tools}),
		ev(1, 6, wire.OriginGateway, &wire.LLMResponse{Content: "gateway saw", CallIndex: 1, Usage: &wire.TokenUsage{PromptTokens: 9, CompletionTokens: 3}}))
	tr, err = atif.Convert(withGateway, nil, atif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(tr)
	if p := validate(t, b); len(p) != 0 {
		t.Fatalf("does not validate: %v\n%s", p, b)
	}
	var agents []string
	for _, s := range tr.Steps {
		if s.Source == "agent" {
			agents = append(agents, s.Message)
		}
	}
	if strings.Join(agents, ",") != ",gateway saw" || *tr.FinalMetrics.TotalPromptTokens != 9 || !jsonEq(tr.Agent.ToolDefinitions, tools) {
		t.Errorf("with the gateway's call: %s", b)
	}
}

func jsonEq(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestConvertRefusesAnotherEpisodesExport(t *testing.T) {
	recs := []wire.Record{{Kind: wire.RecordReset, EpisodeID: "a"}}
	if _, err := atif.Convert(recs, &gateway.Export{EpisodeID: "b"}, atif.Options{}); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("converted with another episode's export: %v", err)
	}
}
