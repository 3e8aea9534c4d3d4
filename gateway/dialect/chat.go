package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/harnessd/harnessd/internal/jsonlist"
	"github.com/harnessd/harnessd/internal/jsonscan"
)

// chatTranslator is OpenAI Chat Completions, the middle format's own
// dialect: a request passes with its messages, tools and other fields as
// they came (read into the middle's types, and written on verbatim).
type chatTranslator struct {
	model  string
	stream bool
	// includeUsage: the agent's stream ends with a usage chunk
	// (stream_options.include_usage).
	includeUsage bool
	// memo, when set, remembers the request for the next (UseMemo).
	memo *Memo
}

func (*chatTranslator) Name() Name { return Chat }

func (*chatTranslator) WriteError(w http.ResponseWriter, f Failure) { writeOpenAIError(w, f) }

// chatWireMessage is what the gateway reads of a Chat Completions message;
// every field but the role is read leniently (the message is sent on as
// it came whatever its other fields hold).
type chatWireMessage struct {
	Role             json.RawMessage `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
	ToolCallID       json.RawMessage `json:"tool_call_id"`
}

// chatMessage reads the message w.
func chatMessage(w *chatWireMessage) (Message, bool) {
	var m Message
	if s, ok := jsonscan.StringValue(w.Role); !ok || s == "" {
		return m, false
	} else {
		m.Role = s
	}
	if c := bytes.TrimSpace(w.Content); len(c) > 0 && c[0] == '"' {
		if s, ok := jsonscan.StringValue(c); ok {
			m.Content = &s
		}
	} else if len(c) > 0 && c[0] == '[' {
		if parts, ok := chatParts(c); ok {
			m.Parts = parts
		}
	}
	m.Reasoning, _ = jsonscan.StringValue(w.ReasoningContent)
	m.ToolCallID, _ = jsonscan.StringValue(w.ToolCallID)
	if len(w.ToolCalls) > 0 {
		m.ToolCalls = chatToolCalls(w.ToolCalls)
	}
	return m, true
}

// chatTool reads one offered tool.
func chatTool(raw json.RawMessage) Tool {
	var t struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	json.Unmarshal(raw, &t)
	return Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}
}

func (t *chatTranslator) Decode(_ *http.Request, body []byte) (*Request, error) {
	if t.memo != nil {
		if fields, chat, err := continued(body, t.memo.take()); err == nil {
			if req, err := t.finish(fields, chat); err == nil {
				t.memo.keep(req.Messages, chat.compactOpen, chat.Messages)
				req.Chat.shareOnly()
				return req, nil
			}
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, fmt.Errorf("chat request: %w", err)
	}
	if fields == nil {
		return nil, errors.New("chat request: not a JSON object")
	}
	msgs, err := chatMessages(fields["messages"])
	if err != nil {
		return nil, err
	}
	chat := &ChatRequest{Messages: msgs}
	if t.memo != nil {
		compact, err := json.Marshal(fields["messages"])
		if err != nil {
			return nil, fmt.Errorf("chat request: messages: %w", err)
		}
		chat.compactOpen = compact[:len(compact)-1]
	}
	req, err := t.finish(fields, chat)
	if err == nil && t.memo != nil {
		t.memo.keep(req.Messages, chat.compactOpen, chat.Messages)
		req.Chat.shareOnly()
	}
	return req, err
}

// finish completes the decode of a request whose top-level fields and
// messages (chat.Messages, and chat.compactMessages when known) are read:
// everything else is checked and read from fields, which it takes.
func (t *chatTranslator) finish(fields map[string]json.RawMessage, chat *ChatRequest) (*Request, error) {
	req := &Request{Chat: *chat, Messages: fields["messages"], Tools: fields["tools"], Sampling: PickSampling(fields)}
	req.Chat.rawMessages = fields["messages"]
	if v, ok := fields["model"]; ok && json.Unmarshal(v, &req.Model) != nil {
		return nil, errors.New("chat request: model must be a string")
	}
	if v, ok := fields["stream"]; ok && string(v) != "null" && json.Unmarshal(v, &req.Stream) != nil {
		return nil, errors.New("chat request: stream must be a boolean")
	}
	if v, ok := fields["tools"]; ok && string(v) != "null" {
		n := jsonlist.Count(v)
		if n < 0 {
			return nil, errors.New("chat request: tools must be a list")
		}
		// One at a time, an element without a function not decoded:
		// decoded whole into raw values and then each into a struct, 6,000
		// empty tools ({},, 18 KB) cost 2.1 MiB (123× the body).
		req.Chat.Tools = make([]Tool, 0, n)
		jsonscan.Elements(v, func(e []byte) bool {
			var tool Tool
			if string(e) != "null" && !jsonlist.NoField(e, "function") {
				tool = chatTool(e)
			}
			req.Chat.Tools = append(req.Chat.Tools, tool)
			return true
		})
		req.Chat.rawTools = v
	}
	var so struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if json.Unmarshal(fields["stream_options"], &so) == nil {
		t.includeUsage = so.IncludeUsage
	}
	req.Chat.Model = req.Model
	req.Chat.ToolChoice, req.Chat.ParallelToolCalls = fields["tool_choice"], fields["parallel_tool_calls"]
	for _, k := range []string{"model", "messages", "tools", "tool_choice", "parallel_tool_calls"} {
		delete(fields, k)
	}
	req.Chat.Params = fields
	t.model, t.stream = req.Model, req.Stream
	return req, nil
}

// chatAnswerMessage is the assistant message of a Chat Completions answer.
func chatAnswerMessage(c *Completion) map[string]any {
	msg := map[string]any{"role": "assistant", "content": c.Text}
	if c.Text == "" && len(c.ToolCalls) > 0 {
		msg["content"] = nil
	}
	if c.Reasoning != "" {
		msg["reasoning_content"] = c.Reasoning
	}
	if len(c.ToolCalls) > 0 {
		msg["tool_calls"] = c.ToolCalls
	}
	return msg
}

func (t *chatTranslator) Encode(w http.ResponseWriter, c *Completion) error {
	id := c.ID
	if id == "" {
		id = "chatcmpl-harnessd"
	}
	created := c.Created
	if created == 0 {
		created = time.Now().Unix()
	}
	model := model(t.model, c)
	if !t.stream {
		return WriteJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": chatAnswerMessage(c), "logprobs": nil, "finish_reason": c.FinishReason}},
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
	if t.includeUsage {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": model, "choices": []any{}, "usage": c.Usage})
	}
	s.raw("", "[DONE]")
	return s.err
}
