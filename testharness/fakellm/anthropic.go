package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropicDialect speaks Anthropic Messages: POST .../v1/messages (with or
// without ?beta=true) and .../v1/messages/count_tokens.
var anthropicDialect = &dialect{
	name:       Anthropic,
	parse:      parseAnthropic,
	write:      writeAnthropic,
	writeError: anthropicError,
}

type anthropicRequest struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Content json.RawMessage `json:"content"`
}

func parseAnthropic(_ *http.Request, body []byte) (*conversation, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("anthropic request: %w", err)
	}
	c := &conversation{model: req.Model, stream: req.Stream, system: flexText(req.System)}
	if c.system != "" {
		c.messages = append(c.messages, message{role: roleSystem, text: c.system})
	}
	for _, t := range req.Tools {
		if t.Name != "" {
			c.tools = append(c.tools, tool{name: t.Name})
		}
	}
	system := []string{c.system}
	for _, m := range req.Messages {
		msg := message{role: roleUser}
		switch m.Role {
		case "assistant":
			msg.role = roleAssistant
		case "system": // Claude Code's mid-conversation-system beta
			msg.role = roleSystem
		}
		var texts []string
		var blocks []anthropicBlock
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				switch b.Type {
				case "text":
					texts = append(texts, b.Text)
				case "tool_result":
					msg.toolResults = append(msg.toolResults, cleanToolResult(flexText(b.Content)))
				case "tool_use", "server_tool_use", "mcp_tool_use":
					msg.toolCalls = append(msg.toolCalls, b.Name)
				}
			}
		} else {
			texts = textParts(m.Content)
		}
		if msg.role == roleUser {
			msg.text = userText(texts)
		} else {
			msg.text = joinNonEmpty(texts)
		}
		if msg.role == roleSystem {
			system = append(system, msg.text)
		}
		c.messages = append(c.messages, msg)
	}
	c.system = joinNonEmpty(system)
	return c, nil
}

func anthropicUsage(res *response, output int) map[string]any {
	return map[string]any{
		"input_tokens": res.inputTokens, "output_tokens": output,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
	}
}

func anthropicStop(res *response) string {
	if res.stopForTools() {
		return "tool_use"
	}
	return "end_turn"
}

func writeAnthropic(w http.ResponseWriter, c *conversation, res *response) error {
	msgID := fmt.Sprintf("msg_fake%06d", res.id)
	toolID := func(i int) string { return fmt.Sprintf("toolu_fake%06d_%d", res.id, i) }
	withText := res.text != "" || len(res.calls) == 0

	if !c.stream {
		content := []any{}
		if withText {
			content = append(content, map[string]any{"type": "text", "text": res.text})
		}
		for i, tc := range res.calls {
			content = append(content, map[string]any{"type": "tool_use", "id": toolID(i), "name": tc.name, "input": tc.args})
		}
		return writeJSON(w, http.StatusOK, map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": c.model, "content": content,
			"stop_reason": anthropicStop(res), "stop_sequence": nil, "usage": anthropicUsage(res, res.outputTokens),
		})
	}

	s := startSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": c.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(res, 1),
	}})
	s.event("ping", map[string]any{"type": "ping"})
	index := 0
	if withText {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, piece := range chunks(res.text, deltaSize) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": piece}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, tc := range res.calls {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": toolID(i), "name": tc.name, "input": map[string]any{}}})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": ""}})
		for _, piece := range chunks(string(tc.args), deltaSize) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStop(res), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": res.outputTokens}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
	return s.err
}

func anthropicError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == 529:
		typ = "overloaded_error"
	case status >= 500:
		typ = "api_error"
	}
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}
