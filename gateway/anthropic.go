package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// DialectAnthropic is Anthropic Messages (Claude Code).
const DialectAnthropic Dialect = "anthropic"

// anthropicDialect translates Anthropic Messages to the engine's chat
// completions and back.
var anthropicDialect = &dialect{
	name:       DialectAnthropic,
	decode:     decodeAnthropic,
	encode:     encodeAnthropic,
	writeError: anthropicError,
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
}

type anthropicRequest struct {
	Model         string          `json:"model"`
	System        json.RawMessage `json:"system"`
	Messages      json.RawMessage `json:"messages"`
	Tools         json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	MaxTokens     json.RawMessage `json:"max_tokens"`
	Temperature   json.RawMessage `json:"temperature"`
	TopP          json.RawMessage `json:"top_p"`
	TopK          json.RawMessage `json:"top_k"`
	StopSequences json.RawMessage `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
}

// blocks reads content given as a string or a list of blocks.
func blocks(raw json.RawMessage) ([]anthropicBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anthropicBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, errors.New("content must be a string or a list of blocks")
	}
	return bs, nil
}

// blockText joins the text of a tool result's content.
func blockText(raw json.RawMessage) (string, error) {
	bs, err := blocks(raw)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n"), nil
}

func decodeAnthropic(_ *http.Request, body []byte) (*agentRequest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("messages request: not a JSON object")
	}
	var in anthropicRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("messages request: %w", err)
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(in.Messages, &msgs); err != nil || len(msgs) == 0 {
		return nil, errors.New("messages request: messages must be a non-empty list")
	}
	var out []any
	if sys, err := blockText(in.System); err != nil {
		return nil, fmt.Errorf("messages request: system: %w", err)
	} else if sys != "" {
		out = append(out, map[string]any{"role": "system", "content": sys})
	}
	for i, m := range msgs {
		bs, err := blocks(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages request: message %d: %w", i, err)
		}
		switch m.Role {
		case "user":
			var parts []any
			var texts []string
			onlyText := true
			for _, b := range bs {
				switch b.Type {
				case "tool_result":
					text, err := blockText(b.Content)
					if err != nil {
						return nil, fmt.Errorf("messages request: message %d: tool_result: %w", i, err)
					}
					out = append(out, map[string]any{"role": "tool", "tool_call_id": b.ToolUseID, "content": text})
				case "text":
					texts = append(texts, b.Text)
					parts = append(parts, map[string]any{"type": "text", "text": b.Text})
				case "image":
					if b.Source != nil {
						url := b.Source.URL
						if b.Source.Type == "base64" {
							url = "data:" + b.Source.MediaType + ";base64," + b.Source.Data
						}
						parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}})
						onlyText = false
					}
				}
			}
			switch {
			case len(parts) == 0:
			case onlyText && len(texts) == 1:
				out = append(out, map[string]any{"role": "user", "content": texts[0]})
			default:
				out = append(out, map[string]any{"role": "user", "content": parts})
			}
		case "assistant":
			msg := map[string]any{"role": "assistant"}
			var text, thinking strings.Builder
			var calls []any
			for _, b := range bs {
				switch b.Type {
				case "text":
					text.WriteString(b.Text)
				case "thinking":
					thinking.WriteString(b.Thinking)
				case "tool_use":
					args, err := compactObject(b.Input)
					if err != nil {
						return nil, fmt.Errorf("messages request: message %d: tool_use input: %w", i, err)
					}
					calls = append(calls, map[string]any{"id": b.ID, "type": "function",
						"function": map[string]any{"name": b.Name, "arguments": args}})
				}
			}
			msg["content"] = text.String()
			if thinking.Len() > 0 {
				msg["reasoning_content"] = thinking.String()
			}
			if len(calls) > 0 {
				msg["tool_calls"] = calls
				if text.Len() == 0 {
					msg["content"] = nil
				}
			}
			out = append(out, msg)
		case "system":
			// Not in Anthropic's schema, but Claude Code sends one to
			// endpoints it takes for compatible ones: a system message.
			var texts []string
			for _, b := range bs {
				if b.Type == "text" {
					texts = append(texts, b.Text)
				}
			}
			out = append(out, map[string]any{"role": "system", "content": strings.Join(texts, "\n")})
		default:
			return nil, fmt.Errorf("messages request: message %d has role %q", i, m.Role)
		}
	}
	chat := map[string]json.RawMessage{}
	put := func(k string, v any) {
		if b, err := json.Marshal(v); err == nil {
			chat[k] = b
		}
	}
	put("model", in.Model)
	put("messages", out)
	tools, err := anthropicTools(in.Tools)
	if err != nil {
		return nil, err
	}
	if len(tools) > 0 {
		put("tools", tools)
		if tc := anthropicToolChoice(in.ToolChoice); tc != nil {
			put("tool_choice", tc)
		}
		var choice struct {
			DisableParallel bool `json:"disable_parallel_tool_use"`
		}
		if json.Unmarshal(in.ToolChoice, &choice) == nil && choice.DisableParallel {
			put("parallel_tool_calls", false)
		}
	}
	for k, v := range map[string]json.RawMessage{"max_tokens": in.MaxTokens, "temperature": in.Temperature,
		"top_p": in.TopP, "top_k": in.TopK, "stop": in.StopSequences} {
		if len(v) > 0 && string(v) != "null" {
			chat[k] = v
		}
	}
	return &agentRequest{model: in.Model, stream: in.Stream, messages: in.Messages, tools: in.Tools,
		sampling: pickSampling(fields), chat: chat}, nil
}

// compactObject returns a tool input as compact JSON object text.
func compactObject(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	if raw[0] != '{' {
		return "", errors.New("not a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// anthropicTools translates custom tools to chat functions; server tools
// (web search and the like, without an input_schema) have no equivalent
// and are left out.
func anthropicTools(raw json.RawMessage) ([]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, errors.New("messages request: tools must be a list of tools")
	}
	var out []any
	for _, t := range tools {
		if t.Name == "" || len(t.InputSchema) == 0 {
			continue
		}
		fn := map[string]any{"name": t.Name, "parameters": t.InputSchema}
		if t.Description != "" {
			fn["description"] = t.Description
		}
		out = append(out, map[string]any{"type": "function", "function": fn})
	}
	return out, nil
}

func anthropicToolChoice(raw json.RawMessage) any {
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	switch c.Type {
	case "auto":
		return "auto"
	case "any":
		return "required"
	case "none":
		return "none"
	case "tool":
		return map[string]any{"type": "function", "function": map[string]any{"name": c.Name}}
	}
	return nil
}

func anthropicStopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	}
	return "end_turn"
}

// toolInput is a tool call's arguments as an Anthropic input object ({}
// when the model produced something else).
func toolInput(args string) json.RawMessage {
	if s, err := compactObject(json.RawMessage(args)); err == nil && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return json.RawMessage("{}")
}

func anthropicID(c *completion) string {
	if strings.HasPrefix(c.ID, "msg_") {
		return c.ID
	}
	return "msg_" + strings.TrimPrefix(c.ID, "chatcmpl-")
}

func anthropicUsage(c *completion) map[string]any {
	return map[string]any{"input_tokens": c.Usage.PromptTokens, "output_tokens": c.Usage.CompletionTokens,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

func encodeAnthropic(w http.ResponseWriter, req *agentRequest, c *completion) error {
	id, model := anthropicID(c), chatModel(req, c)
	if !req.stream {
		var content []any
		if c.Reasoning != "" {
			content = append(content, map[string]any{"type": "thinking", "thinking": c.Reasoning, "signature": ""})
		}
		if c.Text != "" || len(c.ToolCalls) == 0 {
			content = append(content, map[string]any{"type": "text", "text": c.Text})
		}
		for _, tc := range c.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": toolInput(tc.Arguments)})
		}
		return writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": anthropicStopReason(c.FinishReason), "stop_sequence": nil, "usage": anthropicUsage(c),
		})
	}
	s := startSSE(w)
	start := anthropicUsage(c)
	start["output_tokens"] = 1
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": start}})
	s.event("ping", map[string]any{"type": "ping"})
	index := 0
	block := func(cb map[string]any, deltas []map[string]any) {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": cb})
		for _, d := range deltas {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if c.Reasoning != "" {
		var ds []map[string]any
		for _, p := range pieces(c.Reasoning) {
			ds = append(ds, map[string]any{"type": "thinking_delta", "thinking": p})
		}
		ds = append(ds, map[string]any{"type": "signature_delta", "signature": ""})
		block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, ds)
	}
	if c.Text != "" || len(c.ToolCalls) == 0 {
		var ds []map[string]any
		for _, p := range pieces(c.Text) {
			ds = append(ds, map[string]any{"type": "text_delta", "text": p})
		}
		block(map[string]any{"type": "text", "text": ""}, ds)
	}
	for _, tc := range c.ToolCalls {
		var ds []map[string]any
		for _, p := range pieces(string(toolInput(tc.Arguments))) {
			ds = append(ds, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		block(map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}, ds)
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStopReason(c.FinishReason), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": c.Usage.CompletionTokens}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
	return s.err
}

// anthropicError answers in Anthropic's error shape. An upstream that is
// down or too slow is reported as 529 overloaded_error, which Anthropic
// clients retry.
func anthropicError(w http.ResponseWriter, f failure) {
	typ := "invalid_request_error"
	switch f.kind {
	case failAuth:
		typ = "authentication_error"
	case failNotFound:
		typ = "not_found_error"
	case failTooLarge:
		typ = "request_too_large"
	case failBudget, failRateLimit:
		typ = "rate_limit_error"
	case failUpstream:
		typ = "api_error"
	case failUnavailable, failTimeout:
		typ, f.status = "overloaded_error", 529
	}
	writeJSON(w, f.status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": f.message}})
}

// countTokens answers Anthropic's count_tokens locally, with an estimate
// (a quarter of the request's bytes); it is never recorded or counted
// against a budget.
func countTokensEstimate(body []byte) int { return max(1, len(body)/4) }
