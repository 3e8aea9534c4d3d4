package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/harnessd/harnessd/internal/jsonlist"
	"github.com/harnessd/harnessd/internal/jsonscan"
)

// anthropicTranslator is Anthropic Messages (Claude Code), translated to
// the middle format and back.
type anthropicTranslator struct {
	model  string
	stream bool
	// memo, when set, remembers the request's messages for the next
	// (UseMemo).
	memo *Memo
}

func (*anthropicTranslator) Name() Name { return Anthropic }

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
	var b anthropicBlock
	if !jsonscan.Elements(raw, func(e []byte) bool {
		if string(e) == "null" || jsonlist.NoField(e, "type", "text", "thinking", "id", "name", "input", "tool_use_id", "content", "is_error", "source") {
			return true // the zero block, of no kind read
		}
		b = anthropicBlock{}
		if json.Unmarshal(e, &b) != nil {
			// A kind not read may have other shapes (a search_result's
			// source is a string): only its type matters.
			var kind struct{ Type string }
			return json.Unmarshal(e, &kind) == nil && kind.Type != "" && !readBlock[kind.Type]
		}
		if readBlock[b.Type] {
			bs = append(bs, b)
		}
		return true
	}) {
		return nil, errors.New("content must be a string or a list of blocks")
	}
	return bs, nil
}

// readBlock is the kinds of block the translation reads; blocks keeps only
// those. Decoding the list whole into a slice of 250-byte blocks made one
// of each element however small: 6,000 empty blocks ({},, 18 KB) cost 3.5
// MiB (205× the body).
var readBlock = map[string]bool{"text": true, "thinking": true, "image": true, "tool_use": true, "tool_result": true}

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

func (t *anthropicTranslator) Decode(_ *http.Request, body []byte) (*Request, error) {
	if t.memo != nil {
		if req, err := t.decodeContinued(body); err == nil {
			return req, nil
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("messages request: not a JSON object")
	}
	var in anthropicRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("messages request: %w", err)
	}
	var out []Message
	err := anthropicMessages(in.Messages, func(i int, m *anthropicWire) error {
		if i == 0 {
			sys, err := anthropicSystem(in.System)
			if err != nil {
				return err
			}
			out = sys
		}
		ms, err := anthropicMessage(i, m.Role, m.Content)
		out = append(out, ms...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t.finish(fields, &in, out)
}

// anthropicSystem translates the system prompt: one system message, or
// none.
func anthropicSystem(raw json.RawMessage) ([]Message, error) {
	sys, err := blockText(raw)
	if err != nil {
		return nil, fmt.Errorf("messages request: system: %w", err)
	}
	if sys == "" {
		return nil, nil
	}
	return []Message{{Role: "system", Content: Text(sys)}}, nil
}

// anthropicMessage translates message i of the conversation.
func anthropicMessage(i int, role string, content json.RawMessage) ([]Message, error) {
	bs, err := blocks(content)
	if err != nil {
		return nil, fmt.Errorf("messages request: message %d: %w", i, err)
	}
	switch role {
	case "user":
		ms, err := anthropicUser(bs)
		if err != nil {
			return nil, fmt.Errorf("messages request: message %d: %w", i, err)
		}
		return ms, nil
	case "assistant":
		msg, err := anthropicAssistant(bs)
		if err != nil {
			return nil, fmt.Errorf("messages request: message %d: %w", i, err)
		}
		return []Message{msg}, nil
	case "system":
		// Not in Anthropic's schema, but Claude Code sends one to
		// endpoints it takes for compatible ones: a system message.
		var texts []string
		for _, b := range bs {
			if b.Type == "text" {
				texts = append(texts, b.Text)
			}
		}
		return []Message{{Role: "system", Content: Text(strings.Join(texts, "\n"))}}, nil
	}
	return nil, fmt.Errorf("messages request: message %d has role %q", i, role)
}

// finish completes the decode of a request whose fields, typed fields and
// messages are read.
func (t *anthropicTranslator) finish(fields map[string]json.RawMessage, in *anthropicRequest, out []Message) (*Request, error) {
	chat := ChatRequest{Model: in.Model, Messages: out, Params: map[string]json.RawMessage{}}
	tools, err := anthropicTools(in.Tools)
	if err != nil {
		return nil, err
	}
	if len(tools) > 0 {
		chat.Tools = tools
		chat.ToolChoice = anthropicToolChoice(in.ToolChoice)
		var choice struct {
			DisableParallel bool `json:"disable_parallel_tool_use"`
		}
		if json.Unmarshal(in.ToolChoice, &choice) == nil && choice.DisableParallel {
			chat.ParallelToolCalls = json.RawMessage("false")
		}
	}
	for k, v := range map[string]json.RawMessage{"max_tokens": in.MaxTokens, "temperature": in.Temperature,
		"top_p": in.TopP, "top_k": in.TopK, "stop": in.StopSequences} {
		if set(v) {
			chat.Params[k] = v
		}
	}
	t.model, t.stream = in.Model, in.Stream
	return &Request{Chat: chat, Model: in.Model, Stream: in.Stream, Messages: in.Messages, Tools: in.Tools,
		Sampling: PickSampling(fields)}, nil
}

// anthropicUser translates a user message's blocks: tool results become
// tool messages, text and images one user message.
func anthropicUser(bs []anthropicBlock) ([]Message, error) {
	var out []Message
	var parts []Part
	var texts []string
	onlyText := true
	for _, b := range bs {
		switch b.Type {
		case "tool_result":
			text, err := blockText(b.Content)
			if err != nil {
				return nil, fmt.Errorf("tool_result: %w", err)
			}
			out = append(out, Message{Role: "tool", ToolCallID: b.ToolUseID, Content: Text(text)})
		case "text":
			texts = append(texts, b.Text)
			parts = append(parts, Part{Type: "text", Text: b.Text})
		case "image":
			if b.Source != nil {
				url := b.Source.URL
				if b.Source.Type == "base64" {
					url = "data:" + b.Source.MediaType + ";base64," + b.Source.Data
				}
				parts = append(parts, Part{Type: "image_url", ImageURL: url})
				onlyText = false
			}
		}
	}
	switch {
	case len(parts) == 0:
	case onlyText && len(texts) == 1:
		out = append(out, Message{Role: "user", Content: Text(texts[0])})
	default:
		out = append(out, Message{Role: "user", Parts: parts})
	}
	return out, nil
}

// anthropicAssistant translates an assistant message's blocks.
func anthropicAssistant(bs []anthropicBlock) (Message, error) {
	var text, thinking strings.Builder
	msg := Message{Role: "assistant"}
	for _, b := range bs {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			thinking.WriteString(b.Thinking)
		case "tool_use":
			args, err := compactObject(b.Input)
			if err != nil {
				return msg, fmt.Errorf("tool_use input: %w", err)
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	msg.Content, msg.Reasoning = Text(text.String()), thinking.String()
	if len(msg.ToolCalls) > 0 && text.Len() == 0 {
		msg.Content = nil
	}
	return msg, nil
}

// anthropicTools translates custom tools to functions; server tools (web
// search and the like, without an input_schema) have no equivalent and are
// left out.
func anthropicTools(raw json.RawMessage) ([]Tool, error) {
	if !set(raw) {
		return nil, nil
	}
	return anthropicToolList(raw)
}

func anthropicToolChoice(raw json.RawMessage) json.RawMessage {
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	switch c.Type {
	case "auto":
		return json.RawMessage(`"auto"`)
	case "any":
		return json.RawMessage(`"required"`)
	case "none":
		return json.RawMessage(`"none"`)
	case "tool":
		return functionChoice(c.Name)
	}
	return nil
}

// functionChoice is the tool_choice naming one function.
func functionChoice(name string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": name}})
	return b
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

func anthropicID(c *Completion) string {
	if strings.HasPrefix(c.ID, "msg_") {
		return c.ID
	}
	return "msg_" + strings.TrimPrefix(c.ID, "chatcmpl-")
}

func anthropicUsage(c *Completion) map[string]any {
	return map[string]any{"input_tokens": c.Usage.PromptTokens, "output_tokens": c.Usage.CompletionTokens,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

func (t *anthropicTranslator) Encode(w http.ResponseWriter, c *Completion) error {
	id, model := anthropicID(c), model(t.model, c)
	if !t.stream {
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
		return WriteJSON(w, http.StatusOK, map[string]any{
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

// WriteError answers in Anthropic's error shape. An upstream that is down
// or too slow is reported as 529 overloaded_error, which Anthropic clients
// retry.
func (*anthropicTranslator) WriteError(w http.ResponseWriter, f Failure) {
	typ := "invalid_request_error"
	switch f.Kind {
	case FailAuth:
		typ = "authentication_error"
	case FailNotFound:
		typ = "not_found_error"
	case FailTooLarge:
		typ = "request_too_large"
	case FailBudget, FailRateLimit:
		typ = "rate_limit_error"
	case FailUpstream:
		typ = "api_error"
	case FailUnavailable, FailTimeout:
		typ, f.Status = "overloaded_error", 529
	}
	WriteJSON(w, f.Status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": f.Message}})
}
