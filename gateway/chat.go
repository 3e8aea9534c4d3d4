package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// chatDialect is OpenAI Chat Completions (OpenCode, Goose, Qwen Code, pi).
// It is the engine's own dialect, so a request passes through with the
// gateway's hygiene only.
var chatDialect = &dialect{
	name:       DialectChat,
	decode:     decodeChat,
	encode:     encodeChat,
	writeError: openAIError,
}

func decodeChat(_ *http.Request, body []byte) (*agentRequest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, fmt.Errorf("chat request: %w", err)
	}
	if fields == nil {
		return nil, errors.New("chat request: not a JSON object")
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(fields["messages"], &msgs); err != nil || len(msgs) == 0 {
		return nil, errors.New("chat request: messages must be a non-empty list of objects")
	}
	for i, m := range msgs {
		var role string
		if json.Unmarshal(m["role"], &role) != nil || role == "" {
			return nil, fmt.Errorf("chat request: message %d has no role", i)
		}
	}
	req := &agentRequest{messages: fields["messages"], tools: fields["tools"], chat: fields, sampling: pickSampling(fields)}
	if v, ok := fields["model"]; ok && json.Unmarshal(v, &req.model) != nil {
		return nil, errors.New("chat request: model must be a string")
	}
	if v, ok := fields["stream"]; ok && string(v) != "null" && json.Unmarshal(v, &req.stream) != nil {
		return nil, errors.New("chat request: stream must be a boolean")
	}
	if v, ok := fields["tools"]; ok && string(v) != "null" {
		var tools []json.RawMessage
		if json.Unmarshal(v, &tools) != nil {
			return nil, errors.New("chat request: tools must be a list")
		}
	}
	var so struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if json.Unmarshal(fields["stream_options"], &so) == nil {
		req.includeUsage = so.IncludeUsage
	}
	return req, nil
}

// chatMessage is the assistant message of a Chat Completions answer.
func chatMessage(c *completion) map[string]any {
	msg := map[string]any{"role": "assistant", "content": c.Text}
	if c.Text == "" && len(c.ToolCalls) > 0 {
		msg["content"] = nil
	}
	if c.Reasoning != "" {
		msg["reasoning_content"] = c.Reasoning
	}
	if len(c.ToolCalls) > 0 {
		calls := make([]any, len(c.ToolCalls))
		for i, tc := range c.ToolCalls {
			calls[i] = map[string]any{"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}}
		}
		msg["tool_calls"] = calls
	}
	return msg
}

func chatModel(req *agentRequest, c *completion) string {
	if req.model != "" {
		return req.model
	}
	return c.Model
}

func encodeChat(w http.ResponseWriter, req *agentRequest, c *completion) error {
	id := c.ID
	if id == "" {
		id = "chatcmpl-harnessd"
	}
	created := c.Created
	if created == 0 {
		created = time.Now().Unix()
	}
	model := chatModel(req, c)
	if !req.stream {
		return writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": chatMessage(c), "logprobs": nil, "finish_reason": c.FinishReason}},
			"usage":   c.Usage,
		})
	}
	s := startSSE(w)
	chunk := func(delta map[string]any, finish any) {
		s.event("", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, piece := range pieces(c.Reasoning) {
		chunk(map[string]any{"reasoning_content": piece}, nil)
	}
	for _, piece := range pieces(c.Text) {
		chunk(map[string]any{"content": piece}, nil)
	}
	for i, tc := range c.ToolCalls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil)
		for _, piece := range pieces(tc.Arguments) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": piece}}}}, nil)
		}
	}
	chunk(map[string]any{}, c.FinishReason)
	if req.includeUsage {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": model, "choices": []any{}, "usage": c.Usage})
	}
	s.raw("", "[DONE]")
	return s.err
}
