package fakellm_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

func postRaw(t *testing.T, hc *http.Client, url, body string) (int, string, http.Header) {
	t.Helper()
	resp, err := hc.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, mustRead(t, resp.Body), resp.Header
}

// TestTolerantParsing feeds request bodies shaped like the real agents'
// (cli-agents.md §1c-§7c), with fields the server does not know, and
// checks what it understood.
func TestTolerantParsing(t *testing.T) {
	s, base, hc := startServer(t, nil)
	cases := []struct {
		name, path, body string
		lastUser         string
		toolResult       string
		tools            []string
	}{
		{"claude code", "/v1/messages?beta=true", `{"model":"mock-model","max_tokens":32000,"stream":false,
		  "system":[{"type":"text","text":"You are Claude Code","cache_control":{"type":"ephemeral","scope":"global"}}],
		  "thinking":{"type":"adaptive"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
		  "output_config":{"effort":"high"},"metadata":{"user_id":"x"},
		  "tools":[{"name":"Bash","description":"d","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"},
		           {"name":"mcp__harness__harness_echo","input_schema":{}}],
		  "messages":[{"role":"user","content":"first, as a string"},
		    {"role":"assistant","content":[{"type":"thinking","thinking":"...","signature":"s"},{"type":"text","text":"ok"},
		      {"type":"tool_use","id":"toolu_1","name":"mcp__harness__harness_echo","input":{"text":"ping"}}]},
		    {"role":"system","content":"mid-conversation system note"},
		    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":false,"content":"ECHO:ping"},
		      {"type":"image","source":{"type":"base64","media_type":"image/png","data":""}}]}]}`,
			"first, as a string", "ECHO:ping", []string{"Bash", "web_search", "mcp__harness__harness_echo"}},
		{"codex", "/v1/responses", `{"model":"gpt-5","instructions":null,"store":false,"stream":false,"parallel_tool_calls":true,
		  "reasoning":{"effort":"medium","summary":"auto"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"p",
		  "text":{"verbosity":"low"},"client_metadata":{},
		  "tools":[{"type":"function","name":"exec_command","parameters":{}},{"type":"custom","name":"apply_patch","format":{"type":"grammar"}},
		    {"type":"namespace","name":"mcp__harness","description":"d","tools":[{"type":"function","name":"harness_echo"},{"type":"function","name":"other"}]},
		    {"type":"web_search","external_web_access":false},{"type":"local_shell"}],
		  "input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"perms"}]},
		    {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>x</environment_context>"}]},
		    {"role":"user","content":"easy input message"},
		    {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},
		    {"type":"function_call","call_id":"c1","name":"harness_echo","namespace":"mcp__harness","arguments":"{}"},
		    {"type":"function_call","call_id":"c2","name":"other","namespace":"mcp__harness","arguments":"{}"},
		    {"type":"function_call_output","call_id":"c1","output":"one"},
		    {"type":"function_call_output","call_id":"c2","output":{"content":[{"type":"input_text","text":"two"}]}}]}`,
			"easy input message", "one\ntwo", []string{"exec_command", "apply_patch", "mcp__harness__harness_echo", "mcp__harness__other"}},
		{"responses string input", "/responses", `{"model":"m","input":"just a string"}`, "just a string", "", nil},
		{"qwen chat", "/v1/chat/completions", `{"model":"qwen","stream":false,"stream_options":{"include_usage":true},
		  "max_tokens":64000,"temperature":0,"top_p":1,"frequency_penalty":0,"presence_penalty":0,"store":false,"parallel_tool_calls":true,
		  "messages":[{"role":"system","content":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}]},
		    {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:"}}]},
		    {"role":"assistant","content":null,"reasoning_content":"hm","tool_calls":[{"id":"a","type":"function","function":{"name":"mcp__harness__harness_echo","arguments":"{}"}}]},
		    {"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"ECHO:1"}]}],
		  "tools":[{"type":"function","function":{"name":"mcp__harness__harness_echo","parameters":{},"strict":false}}],
		  "functions":[{"name":"legacy_fn"}]}`,
			"look", "ECHO:1", []string{"mcp__harness__harness_echo", "legacy_fn"}},
		{"gemini cli", "/v1beta/models/gemini-2.5-pro:generateContent", `{"model":"ignored",
		  "system_instruction":{"parts":[{"text":"snake case system"}]},
		  "contents":[{"role":"user","parts":[{"text":"<session_context>ctx</session_context>"},{"text":"do it"}]},
		    {"role":"model","parts":[{"text":"thought","thought":true},{"functionCall":{"id":"x","name":"mcp_harness_harness_echo","args":{}},"thoughtSignature":"s"}]},
		    {"role":"user","parts":[{"functionResponse":{"id":"x","name":"mcp_harness_harness_echo","response":{"output":"<untrusted_context>\nECHO:g\n</untrusted_context>"}}}]}],
		  "tools":[{"functionDeclarations":[{"name":"mcp_harness_harness_echo","parametersJsonSchema":{}}]},{"googleSearch":{}},
		    {"function_declarations":[{"name":"snake_tool"}]}],
		  "generationConfig":{"temperature":1,"topP":0.95,"thinkingConfig":{"includeThoughts":true},"responseJsonSchema":{}},
		  "safetySettings":[],"labels":{}}`,
			"do it", "ECHO:g", []string{"mcp_harness_harness_echo", "snake_tool"}},
	}
	for i, tc := range cases {
		code, body, _ := postRaw(t, hc, base+tc.path, tc.body)
		if code != 200 {
			t.Errorf("%s: %d %s", tc.name, code, body)
			continue
		}
		e := s.Requests()[i]
		if e.LastUser != tc.lastUser || e.ToolResultText != tc.toolResult || e.ToolResult != (tc.toolResult != "") ||
			strings.Join(e.Tools, ",") != strings.Join(tc.tools, ",") {
			t.Errorf("%s: understood last_user=%q tool_result=%v %q tools=%v", tc.name, e.LastUser, e.ToolResult, e.ToolResultText, e.Tools)
		}
		if tc.toolResult != "" && !strings.Contains(body, "MOCK-DONE: "+strings.ReplaceAll(tc.toolResult, "\n", `\n`)) {
			t.Errorf("%s: answer %s", tc.name, body)
		}
	}
	if m := s.Requests()[4].Model; m != "gemini-2.5-pro" {
		t.Errorf("gemini model from path: %q", m)
	}
}

// TestGeminiJSONArrayStream: streamGenerateContent without alt=sse answers
// a JSON array of chunks.
func TestGeminiJSONArrayStream(t *testing.T) {
	_, base, hc := startServer(t, nil)
	c := conv{Model: "m", Users: []string{"a reply long enough to take several chunks"}, Tools: []tspec{{Name: "t"}}, Stream: true}
	code, body, hdr := postRaw(t, hc, base+"/v1beta/models/m:streamGenerateContent", string(must(json.Marshal(geminiClient.body(c)))))
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s %s", code, hdr.Get("Content-Type"), body)
	}
	chunks := decode[[]geminiChunk](t, body)
	if len(chunks) < 2 {
		t.Errorf("%d chunks", len(chunks))
	}
	if got := geminiTurn(t, chunks); got.Text != "MOCK-REPLY: a reply long enough to take several chunks" || got.Stop != "STOP" {
		t.Errorf("%+v", got)
	}
}

// TestResponsesCustomTool: a freeform custom tool (Codex's apply_patch) is
// answered with custom_tool_call and a raw input string.
func TestResponsesCustomTool(t *testing.T) {
	sc := mustScript(t, `{"rules": [{"when": {"tool_result": false}, "reply": {"tool": "apply_patch", "arguments": {"input": "*** Begin Patch\n*** End Patch"}}}]}`)
	for _, stream := range []bool{false, true} {
		_, base, hc := startServer(t, sc)
		body := `{"model":"m","stream":` + map[bool]string{false: "false", true: "true"}[stream] + `,
		  "tools":[{"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"..."}}],
		  "input":[{"role":"user","content":"patch it"}]}`
		resp, err := hc.Post(base+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got := responsesClient.read(t, resp, conv{Stream: stream})
		resp.Body.Close()
		if len(got.Calls) != 1 || !got.Calls[0].Custom || got.Calls[0].Name != "apply_patch" ||
			got.Calls[0].Args != "*** Begin Patch\n*** End Patch" || got.Calls[0].ID == "" {
			t.Errorf("stream=%v: %+v", stream, got)
		}
	}
}

// TestChatWithoutUsageOption: a streamed chat answer carries no usage
// chunk unless stream_options.include_usage asks for one.
func TestChatWithoutUsageOption(t *testing.T) {
	_, base, hc := startServer(t, nil)
	code, body, _ := postRaw(t, hc, base+"/v1/chat/completions",
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"t"}}]}`)
	if code != 200 || strings.Contains(body, `"usage"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") || !strings.Contains(body, "MOCK-REPLY") {
		t.Errorf("%d %s", code, body)
	}
}

func TestModelDefault(t *testing.T) {
	s, base, hc := startServer(t, nil)
	postRaw(t, hc, base+"/v1/messages", `{"messages":[{"role":"user","content":"no model"}]}`)
	if m := s.Requests()[0].Model; m != fakellm.DefaultModel {
		t.Errorf("model %q", m)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
