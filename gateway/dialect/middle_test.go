package dialect

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// canon re-encodes JSON so that two texts compare by value.
func canon(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestDecodeToMiddle: the same conversation (system prompt, user turn, a
// tool call with arguments, its result, a tool offered, a sampling
// parameter) in each dialect decodes to the same typed middle request and
// the same Chat Completions messages.
func TestDecodeToMiddle(t *testing.T) {
	bodies := map[Name]string{
		Chat: `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"add 1 and 2"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"3"}],
			"tools":[{"type":"function","function":{"name":"add","description":"adds","parameters":{"type":"object"}}}],"max_tokens":50}`,
		Anthropic: `{"model":"m","system":"be brief","messages":[{"role":"user","content":"add 1 and 2"},
			{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"add","input":{"a":1,"b":2}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"3"}]}],
			"tools":[{"name":"add","description":"adds","input_schema":{"type":"object"}}],"max_tokens":50}`,
		Responses: `{"model":"m","instructions":"be brief","input":[{"role":"user","content":"add 1 and 2"},
			{"type":"function_call","call_id":"c1","name":"add","arguments":"{\"a\":1,\"b\":2}"},
			{"type":"function_call_output","call_id":"c1","output":"3"}],
			"tools":[{"type":"function","name":"add","description":"adds","parameters":{"type":"object"}}],"max_output_tokens":50}`,
		Gemini: `{"systemInstruction":{"parts":[{"text":"be brief"}]},"contents":[{"role":"user","parts":[{"text":"add 1 and 2"}]},
			{"role":"model","parts":[{"functionCall":{"id":"c1","name":"add","args":{"a":1,"b":2}}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"add","response":{"output":"3"}}}]}],
			"tools":[{"functionDeclarations":[{"name":"add","description":"adds","parameters":{"type":"object"}}]}],"generationConfig":{"maxOutputTokens":50}}`,
	}
	want := []Message{
		{Role: "system", Content: Text("be brief")},
		{Role: "user", Content: Text("add 1 and 2")},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "add", Arguments: `{"a":1,"b":2}`}}},
		{Role: "tool", ToolCallID: "c1", Content: Text("3")},
	}
	var first string
	for _, name := range Names {
		r := httptest.NewRequest("POST", "/v1beta/models/m:generateContent", nil)
		tr := New(name)
		if tr.Name() != name {
			t.Fatalf("New(%s) is %s", name, tr.Name())
		}
		req, err := tr.Decode(r, []byte(bodies[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(req.Chat.Messages, want) {
			t.Errorf("%s: messages\n %+v\nwant\n %+v", name, req.Chat.Messages, want)
		}
		if len(req.Chat.Tools) != 1 || req.Chat.Tools[0].Name != "add" || req.Chat.Tools[0].Description != "adds" || !req.OffersTools() {
			t.Errorf("%s: tools %+v", name, req.Chat.Tools)
		}
		if req.Model != "m" || req.Chat.Model != "m" {
			t.Errorf("%s: model %q / %q", name, req.Model, req.Chat.Model)
		}
		fields, err := req.Chat.Fields()
		if err != nil {
			t.Fatal(err)
		}
		if string(fields["max_tokens"]) != "50" {
			t.Errorf("%s: max_tokens %s", name, fields["max_tokens"])
		}
		msgs := canon(t, fields["messages"])
		if name == Chat {
			first = msgs
		} else if msgs != first {
			t.Errorf("%s: chat messages\n %s\nwant (as from Chat Completions)\n %s", name, msgs, first)
		}
	}
}

// TestChatVerbatim: a Chat Completions agent's messages and tools are
// typed for the gateway but written on as they came, fields the middle
// does not know included.
func TestChatVerbatim(t *testing.T) {
	body := `{"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}],"name":"u"}],
		"tools":[{"type":"function","function":{"name":"f","strict":true}}],"response_format":{"type":"json_object"}}`
	req, err := New(Chat).Decode(httptest.NewRequest("POST", "/v1/chat/completions", nil), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if m := req.Chat.Messages[0]; m.Role != "user" || len(m.Parts) != 1 || m.Parts[0].Text != "hi" {
		t.Errorf("typed message %+v", m)
	}
	fields, _ := req.Chat.Fields()
	for _, s := range []string{`"cache_control"`, `"name":"u"`} {
		if !strings.Contains(string(fields["messages"]), s) {
			t.Errorf("messages lost %s: %s", s, fields["messages"])
		}
	}
	if !strings.Contains(string(fields["tools"]), `"strict":true`) || fields["response_format"] == nil {
		t.Errorf("tools or other fields not passed on: %v", fields)
	}
}

// TestTranslatorState: a translator's dialect-only state is its own: two
// Gemini streams, one asked as SSE, one as a JSON array, decoded before
// either is answered, each get their own shape; a Responses translator
// answers a namespaced tool's call with its namespace, another one without.
func TestTranslatorState(t *testing.T) {
	body := []byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	sse, array := New(Gemini), New(Gemini)
	if _, err := sse.Decode(httptest.NewRequest("POST", "/v1beta/models/m:streamGenerateContent?alt=sse", nil), body); err != nil {
		t.Fatal(err)
	}
	if _, err := array.Decode(httptest.NewRequest("POST", "/v1beta/models/m:streamGenerateContent", nil), body); err != nil {
		t.Fatal(err)
	}
	c := &Completion{ID: "1", Text: "hello", FinishReason: "stop"}
	w1, w2 := httptest.NewRecorder(), httptest.NewRecorder()
	sse.Encode(w1, c)
	array.Encode(w2, c)
	if !strings.HasPrefix(w1.Body.String(), "data: ") || !strings.HasPrefix(w2.Body.String(), "[") {
		t.Errorf("alt=sse answered %q, the array %q", w1.Body.String(), w2.Body.String())
	}
	ns := New(Responses)
	if _, err := ns.Decode(nil, []byte(`{"input":"hi","tools":[{"type":"namespace","name":"mcp__env__","tools":[{"type":"function","name":"add"}]}]}`)); err != nil {
		t.Fatal(err)
	}
	plain := New(Responses)
	if _, err := plain.Decode(nil, []byte(`{"input":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	call := &Completion{ID: "2", ToolCalls: []ToolCall{{ID: "c", Name: "mcp__env__add", Arguments: "{}"}}, FinishReason: "tool_calls"}
	w1, w2 = httptest.NewRecorder(), httptest.NewRecorder()
	ns.Encode(w1, call)
	plain.Encode(w2, call)
	if !strings.Contains(w1.Body.String(), `"namespace":"mcp__env__"`) || strings.Contains(w2.Body.String(), `"namespace"`) {
		t.Errorf("namespaced answer %s\nplain answer %s", w1.Body.String(), w2.Body.String())
	}
}
