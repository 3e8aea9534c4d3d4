package atif_test

import (
	"encoding/json"
	"strings"
	"testing"

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
