package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// chatDialect speaks OpenAI Chat Completions: POST .../chat/completions.
var chatDialect = &dialect{
	name:       OpenAIChat,
	parse:      parseChat,
	write:      writeChat,
	writeError: openAIError,
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Functions []struct {
		Name string `json:"name"`
	} `json:"functions"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func parseChat(_ *http.Request, body []byte) (*conversation, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("chat request: %w", err)
	}
	c := &conversation{model: req.Model, stream: req.Stream,
		includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	for _, t := range req.Tools {
		if t.Function.Name != "" {
			c.tools = append(c.tools, tool{name: t.Function.Name})
		}
	}
	for _, f := range req.Functions {
		if f.Name != "" {
			c.tools = append(c.tools, tool{name: f.Name})
		}
	}
	var system []string
	for _, m := range req.Messages {
		texts := textParts(m.Content)
		switch m.Role {
		case "system", "developer":
			t := joinNonEmpty(texts)
			system = append(system, t)
			c.messages = append(c.messages, message{role: roleSystem, text: t})
		case "tool", "function":
			c.messages = append(c.messages, message{role: roleTool, toolResults: []string{cleanToolResult(flexText(m.Content))}})
		case "assistant":
			msg := message{role: roleAssistant, text: joinNonEmpty(texts)}
			for _, tc := range m.ToolCalls {
				msg.toolCalls = append(msg.toolCalls, tc.Function.Name)
			}
			c.messages = append(c.messages, msg)
		default:
			c.messages = append(c.messages, message{role: roleUser, text: userText(texts)})
		}
	}
	c.system = joinNonEmpty(system)
	return c, nil
}

func writeChat(w http.ResponseWriter, c *conversation, res *response) error {
	id := fmt.Sprintf("chatcmpl-fake%06d", res.id)
	callID := func(i int) string { return fmt.Sprintf("call_fake%06d_%d", res.id, i) }
	finish := "stop"
	if res.stopForTools() {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": res.inputTokens, "completion_tokens": res.outputTokens,
		"total_tokens": res.inputTokens + res.outputTokens}

	if !c.stream {
		msg := map[string]any{"role": "assistant", "content": res.text}
		if res.text == "" && len(res.calls) > 0 {
			msg["content"] = nil
		}
		if len(res.calls) > 0 {
			var calls []any
			for i, tc := range res.calls {
				calls = append(calls, map[string]any{"id": callID(i), "type": "function",
					"function": map[string]any{"name": tc.name, "arguments": string(tc.args)}})
			}
			msg["tool_calls"] = calls
		}
		choice := map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}
		body := map[string]any{
			"id": id, "object": "chat.completion", "created": res.created, "model": c.model,
			"choices": []any{choice}, "usage": usage,
		}
		if e := res.engine; e != nil {
			if e.req.ReturnTokenIDs {
				body["prompt_token_ids"] = e.prompt
				choice["token_ids"] = e.completion
			}
			if e.req.Logprobs {
				choice["logprobs"] = e.logprobs()
			}
		}
		return writeJSON(w, http.StatusOK, body)
	}

	s := startSSE(w)
	chunk := func(delta map[string]any, finishReason any) {
		s.event("", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": res.created, "model": c.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finishReason}},
		})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, piece := range chunks(res.text, deltaSize) {
		chunk(map[string]any{"content": piece}, nil)
	}
	for i, tc := range res.calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": callID(i), "type": "function",
			"function": map[string]any{"name": tc.name, "arguments": ""}}}}, nil)
		for _, piece := range chunks(string(tc.args), deltaSize) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": piece}}}}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	if c.includeUsage {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": res.created,
			"model": c.model, "choices": []any{}, "usage": usage})
	}
	s.event("", "[DONE]")
	return s.err
}

// openAIError answers in OpenAI's error shape (chat and Responses).
func openAIError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	var code any
	switch {
	case status == http.StatusUnauthorized:
		typ, code = "authentication_error", "invalid_api_key"
	case status == http.StatusNotFound:
		code = "not_found"
	case status == http.StatusTooManyRequests:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}
