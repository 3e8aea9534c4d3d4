package fakellm_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

// agentTools are the tools each dialect's test offers, named the way a
// real agent names the MCP tool harness/harness_echo, among distractors.
var agentTools = map[fakellm.Dialect]struct {
	tools []tspec
	want  tspec
}{
	fakellm.Anthropic: {[]tspec{{Name: "Read"}, {Name: "echo_history"}, {Name: "mcp__harness__harness_echo"}, {Name: "Bash"}},
		tspec{Name: "mcp__harness__harness_echo"}},
	fakellm.OpenAIChat: {[]tspec{{Name: "bash"}, {Name: "harness_harness_echo"}, {Name: "echo_history"}},
		tspec{Name: "harness_harness_echo"}},
	fakellm.OpenAIResponses: {[]tspec{{Name: "exec_command"}, {Name: "spawn_agent", Namespace: "multi_agent_v1"},
		{Name: "harness_echo", Namespace: "mcp__harness"}, {Name: "echo_history"}},
		tspec{Name: "harness_echo", Namespace: "mcp__harness"}},
	fakellm.Gemini: {[]tspec{{Name: "read_file"}, {Name: "mcp_harness_harness_echo"}, {Name: "echo_history"}},
		tspec{Name: "mcp_harness_harness_echo"}},
}

func forEachDialect(t *testing.T, f func(t *testing.T, dc dialectClient, stream bool)) {
	for _, dc := range clients {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", dc.name, stream), func(t *testing.T) { f(t, dc, stream) })
		}
	}
}

// TestDefaultToolLoop drives the default behaviour through a whole tool
// loop in every dialect: the request offering the tool gets a call with the
// name (and namespace) resolved from "call harness_echo", the request
// carrying the result gets "MOCK-DONE: <result>".
func TestDefaultToolLoop(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dc dialectClient, stream bool) {
		s, base, hc := startServer(t, nil)
		at := agentTools[dc.name]
		c := conv{Model: "mock-model", System: "you are a test", Tools: at.tools, Stream: stream,
			Users: []string{`call harness_echo {"text":"ping"}`}}

		first := dc.do(t, hc, base, c)
		if len(first.Calls) != 1 {
			t.Fatalf("first answer %+v, want one tool call", first)
		}
		got := first.Calls[0]
		if got.Name != at.want.Name || got.Namespace != at.want.Namespace || got.Args != `{"text":"ping"}` {
			t.Errorf("call %+v, want %+v with {\"text\":\"ping\"}", got, at.want)
		}
		if dc.name != fakellm.Gemini && got.ID == "" {
			t.Errorf("call has no id")
		}
		if first.Stop != dc.toolStop || first.Input <= 0 || first.Output <= 0 {
			t.Errorf("stop %q usage %d/%d, want %q and positive usage", first.Stop, first.Input, first.Output, dc.toolStop)
		}

		c.Call, c.Result = &got, "ECHO:ping"
		second := dc.do(t, hc, base, c)
		if second.Text != "MOCK-DONE: ECHO:ping" || len(second.Calls) != 0 {
			t.Errorf("second answer %+v, want text MOCK-DONE: ECHO:ping", second)
		}
		if second.Stop != dc.textStop {
			t.Errorf("stop %q, want %q", second.Stop, dc.textStop)
		}

		log := s.Requests()
		if len(log) != 2 {
			t.Fatalf("log has %d entries, want 2", len(log))
		}
		wantFull := at.want.Name
		if at.want.Namespace != "" {
			wantFull = at.want.Namespace + "__" + at.want.Name
		}
		for i, e := range log {
			if e.N != i+1 || e.Dialect != dc.name || e.Kind != fakellm.KindGenerate || e.Stream != stream ||
				e.Model != "mock-model" || e.Outcome != fakellm.OutcomeOK || e.Status != 200 {
				t.Errorf("entry %d: %+v", i, e)
			}
			if e.LastUser != `call harness_echo {"text":"ping"}` {
				t.Errorf("entry %d last user %q", i, e.LastUser)
			}
			if !contains(e.Tools, wantFull) {
				t.Errorf("entry %d tools %v lack %s", i, e.Tools, wantFull)
			}
			if e.Headers["Authorization"] != "Bearer test-key" {
				t.Errorf("entry %d headers %v", i, e.Headers)
			}
		}
		if log[0].Rule != "default:call" || log[0].ToolResult || len(log[0].ReplyCalls) != 1 {
			t.Errorf("first entry %+v", log[0])
		}
		if log[1].Rule != "default:tool-result" || !log[1].ToolResult || log[1].ToolResultText != "ECHO:ping" ||
			log[1].ReplyText != "MOCK-DONE: ECHO:ping" {
			t.Errorf("second entry %+v", log[1])
		}
	})
}

// TestScriptedLoop runs a script with text before two parallel calls,
// templated arguments, and a templated final answer that proves the tool
// result and the conversation went through the model loop.
func TestScriptedLoop(t *testing.T) {
	sc := mustScript(t, `{"rules": [
	  {"name": "final", "when": {"tool_result": true},
	   "reply": {"text": "final: {{tool_result}} | all: {{tool_results}} | users: {{user_messages}} | n={{n}}"}},
	  {"name": "ask", "when": {"tool_offered": "echo", "user_contains": "go"},
	   "reply": {"text": "calling now", "tool": "harness_echo", "arguments": {"text": "{{user}}", "n": 2, "deep": ["{{model}}"]},
	             "calls": [{"tool": "echo_history"}]}}
	]}`)
	forEachDialect(t, func(t *testing.T, dc dialectClient, stream bool) {
		_, base, hc := startServer(t, sc)
		at := agentTools[dc.name]
		c := conv{Model: "m1", System: "sys", Tools: at.tools, Stream: stream, Users: []string{"hello", "go now"}}
		first := dc.do(t, hc, base, c)
		if first.Text != "calling now" || len(first.Calls) != 2 {
			t.Fatalf("first %+v, want text and two calls", first)
		}
		if first.Calls[0].Name != at.want.Name || first.Calls[0].Namespace != at.want.Namespace ||
			first.Calls[0].Args != `{"deep":["m1"],"n":2,"text":"go now"}` {
			t.Errorf("call 0 %+v", first.Calls[0])
		}
		if first.Calls[1].Name != "echo_history" || first.Calls[1].Args != `{}` {
			t.Errorf("call 1 %+v", first.Calls[1])
		}
		if dc.name != fakellm.Gemini && first.Calls[0].ID == first.Calls[1].ID {
			t.Errorf("calls share id %q", first.Calls[0].ID)
		}
		c.Call, c.Result = &first.Calls[0], "R1"
		second := dc.do(t, hc, base, c)
		if want := "final: R1 | all: R1 | users: hello | go now | n=2"; second.Text != want {
			t.Errorf("second text %q, want %q", second.Text, want)
		}
	})
}

// TestNamingStyles resolves one script tool name against every agent's
// naming of the same MCP tool.
func TestNamingStyles(t *testing.T) {
	sc := mustScript(t, `{"rules": [{"when": {}, "reply": {"tool": "harness_echo", "arguments": {"text": "x"}}}]}`)
	cases := []struct {
		agent string
		d     fakellm.Dialect
		tools []tspec
		want  tspec
	}{
		{"claude", fakellm.Anthropic, []tspec{{Name: "Task"}, {Name: "mcp__harness__harness_echo"}}, tspec{Name: "mcp__harness__harness_echo"}},
		{"qwen", fakellm.OpenAIChat, []tspec{{Name: "tool_search"}, {Name: "mcp__harness__harness_echo"}}, tspec{Name: "mcp__harness__harness_echo"}},
		{"gemini", fakellm.Gemini, []tspec{{Name: "glob"}, {Name: "mcp_harness_harness_echo"}}, tspec{Name: "mcp_harness_harness_echo"}},
		{"opencode", fakellm.OpenAIChat, []tspec{{Name: "bash"}, {Name: "harness_harness_echo"}}, tspec{Name: "harness_harness_echo"}},
		{"copilot", fakellm.OpenAIChat, []tspec{{Name: "view"}, {Name: "harness-harness_echo"}}, tspec{Name: "harness-harness_echo"}},
		{"pi", fakellm.OpenAIChat, []tspec{{Name: "read"}, {Name: "harness_echo"}}, tspec{Name: "harness_echo"}},
		{"codex", fakellm.OpenAIResponses, []tspec{{Name: "exec_command"}, {Name: "harness_echo", Namespace: "mcp__harness"}},
			tspec{Name: "harness_echo", Namespace: "mcp__harness"}},
	}
	for _, tc := range cases {
		t.Run(tc.agent, func(t *testing.T) {
			_, base, hc := startServer(t, sc)
			got := clientFor(tc.d).do(t, hc, base, conv{Model: "m", Tools: tc.tools, Users: []string{"hi"}, Stream: true})
			if len(got.Calls) != 1 || got.Calls[0].Name != tc.want.Name || got.Calls[0].Namespace != tc.want.Namespace {
				t.Errorf("calls %+v, want %+v", got.Calls, tc.want)
			}
		})
	}
}

// TestDefaultBehaviour covers the default answers other than the loop.
func TestDefaultBehaviour(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dc dialectClient, stream bool) {
		s, base, hc := startServer(t, nil)
		tools := agentTools[dc.name].tools
		cases := []struct {
			name  string
			c     conv
			text  string
			calls []call
			rule  string
		}{
			{"aux call without tools", conv{Users: []string{`call harness_echo {"text":"x"}`}}, "MOCK-AUX", nil, "default:no-tools"},
			{"plain message", conv{Tools: tools, Users: []string{"earlier", "just chatting"}}, "MOCK-REPLY: just chatting", nil, "default:reply"},
			{"unknown tool", conv{Tools: tools, Users: []string{"call nosuchtool {}"}}, "MOCK-REPLY: call nosuchtool {}", nil, "default:reply"},
			{"call without arguments", conv{Tools: tools, Users: []string{"please call echo_history."}}, "",
				[]call{{Name: "echo_history", Args: "{}"}}, "default:call"},
			{"second call directive resolves", conv{Tools: tools, Users: []string{`call the tool: call echo_history {"a":[1,2]} thanks`}}, "",
				[]call{{Name: "echo_history", Args: `{"a":[1,2]}`}}, "default:call"},
		}
		for i, tc := range cases {
			tc.c.Model, tc.c.Stream = "m", stream
			got := dc.do(t, hc, base, tc.c)
			for j := range got.Calls {
				got.Calls[j].ID = ""
			}
			if got.Text != tc.text || !reflect.DeepEqual(got.Calls, tc.calls) {
				t.Errorf("%s: got %+v, want text %q calls %+v", tc.name, got, tc.text, tc.calls)
			}
			if e := s.Requests()[i]; e.Rule != tc.rule {
				t.Errorf("%s: rule %q, want %q", tc.name, e.Rule, tc.rule)
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
