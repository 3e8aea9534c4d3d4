package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

// TestResponsesNamespaceTools: Codex offers MCP tools inside a namespace
// tool. The engine sees them flattened; the answer's call carries the
// namespace and the tool's own name again, and sending it back keeps the
// chain.
func TestResponsesNamespaceTools(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	tools := []any{map[string]any{"type": "namespace", "name": "mcp__env__", "description": "env tools",
		"tools": []any{map[string]any{"type": "function", "name": "echo", "parameters": map[string]any{"type": "object"}}}}}
	input := []any{map[string]any{"type": "message", "role": "user", "content": `call mcp__env__echo {"text":"hi"}`}}
	send := func() []map[string]any {
		status, body := gw.post(t, "/v1/responses", gw.bearer(), map[string]any{"model": "m", "input": input, "tools": tools})
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var resp struct{ Output []map[string]any }
		json.Unmarshal(body, &resp)
		return resp.Output
	}
	out := send()
	if len(out) != 1 || out[0]["type"] != "function_call" || out[0]["name"] != "echo" || out[0]["namespace"] != "mcp__env__" {
		t.Fatalf("output %v", out)
	}
	var up struct {
		Tools []struct {
			Function struct{ Name string } `json:"function"`
		} `json:"tools"`
	}
	json.Unmarshal(llm.Requests()[0].Body, &up)
	if len(up.Tools) != 1 || up.Tools[0].Function.Name != "mcp__env__echo" {
		t.Fatalf("engine tools %s", llm.Requests()[0].Body)
	}
	input = append(input, out[0], map[string]any{"type": "function_call_output", "call_id": out[0]["call_id"], "output": "hi"})
	if out = send(); len(out) != 1 || !strings.Contains(string(mustJSON(out[0])), "MOCK-DONE: hi") {
		t.Fatalf("second output %v", out)
	}
	checkEngineIDs(t, llm, gw, 2)
}

// TestAnthropicSystemMessage: a system message inside messages (Claude Code
// sends one) becomes a chat system message, not a 400.
func TestAnthropicSystemMessage(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	status, body := gw.post(t, "/v1/messages", map[string]string{"x-api-key": gw.Key(), "anthropic-version": "2023-06-01"},
		map[string]any{"model": "m", "max_tokens": 100, "messages": []any{
			map[string]any{"role": "user", "content": "hello"},
			map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": "be brief"}}},
		}})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var up struct {
		Messages []struct {
			Role    string
			Content string
		} `json:"messages"`
	}
	json.Unmarshal(llm.Requests()[0].Body, &up)
	if len(up.Messages) != 2 || up.Messages[1].Role != "system" || up.Messages[1].Content != "be brief" {
		t.Fatalf("engine request %s", llm.Requests()[0].Body)
	}
}
