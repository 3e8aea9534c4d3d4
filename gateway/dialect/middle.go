package dialect

import (
	"bytes"
	"encoding/json"

	"github.com/harnessd/harnessd/wire"
)

// ChatRequest is a generation request in the middle format: OpenAI Chat
// Completions as the engine takes it, before the gateway's hygiene, caps
// and injections.
type ChatRequest struct {
	// Model is the model asked for ("" leaves the field out).
	Model string
	// Messages is the conversation.
	Messages []Message
	// Tools is the function tools offered.
	Tools []Tool
	// ToolChoice is "auto", "none", "required" or {"type":"function",
	// "function":{"name":...}}, as JSON; nil leaves it out.
	ToolChoice json.RawMessage
	// ParallelToolCalls is a JSON boolean; nil leaves it out.
	ParallelToolCalls json.RawMessage
	// Params is every other field by its Chat Completions name, as given:
	// the sampling parameters (max_tokens, temperature, top_p, top_k, stop,
	// seed, ...) and, from a Chat Completions agent, whatever else it sent.
	Params map[string]json.RawMessage

	// rawMessages and rawTools are a Chat Completions agent's messages and
	// tools as they came, written by Fields in place of Messages and Tools
	// (which a translator does not change after Decode).
	rawMessages, rawTools json.RawMessage
	// compactOpen is rawMessages compacted as encoding/json writes a
	// json.RawMessage, without its closing bracket (nil: not known).
	compactOpen []byte
}

// CompactMessages returns the "messages" value Fields returns, compacted
// as encoding/json writes a json.RawMessage (HTML-escaped), without its
// closing bracket, when the decode already has it (nil: not known): the
// value is open followed by "]". Its bytes may be shared with other
// requests of the conversation (Memo) and must not be written.
func (r *ChatRequest) CompactMessages() (open []byte) { return r.compactOpen }

// shareOnly caps the messages and their compacted list at their length,
// so that appending to what a request holds never writes into the arrays
// a Memo shares.
func (r *ChatRequest) shareOnly() {
	r.Messages = r.Messages[:len(r.Messages):len(r.Messages)]
	r.compactOpen = r.compactOpen[:len(r.compactOpen):len(r.compactOpen)]
}

// Fields returns the request as the top-level fields of a Chat Completions
// body. Where the messages were not sent as a Chat Completions list but
// their compacted list is known (CompactMessages), the "messages" value
// is nil: the body is written with CompactMessages in its place.
func (r *ChatRequest) Fields() (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(r.Params)+5)
	for k, v := range r.Params {
		out[k] = v
	}
	if r.Model != "" {
		b, err := json.Marshal(r.Model)
		if err != nil {
			return nil, err
		}
		out["model"] = b
	}
	var err error
	if out["messages"] = r.rawMessages; r.rawMessages == nil && r.compactOpen == nil {
		if out["messages"], err = json.Marshal(r.Messages); err != nil {
			return nil, err
		}
	}
	switch {
	case r.rawTools != nil:
		out["tools"] = r.rawTools
	case r.Tools != nil:
		if out["tools"], err = json.Marshal(r.Tools); err != nil {
			return nil, err
		}
	}
	if r.ToolChoice != nil {
		out["tool_choice"] = r.ToolChoice
	}
	if r.ParallelToolCalls != nil {
		out["parallel_tool_calls"] = r.ParallelToolCalls
	}
	return out, nil
}

// Message is one message of the conversation.
type Message struct {
	// Role is system, user, assistant or tool.
	Role string
	// Content is the message's text; nil writes null (an assistant message
	// that only calls tools).
	Content *string
	// Parts, when not nil, is the content as a list of parts instead.
	Parts []Part
	// Reasoning is an assistant message's reasoning (reasoning_content).
	Reasoning string
	// ToolCalls is an assistant message's tool calls.
	ToolCalls []ToolCall
	// ToolCallID is the call a tool message answers.
	ToolCallID string
}

// Text returns a pointer to s, for Message.Content.
func Text(s string) *string { return &s }

// MarshalJSON writes the message as Chat Completions has it.
func (m Message) MarshalJSON() ([]byte, error) {
	out := struct {
		Content          any        `json:"content"`
		ReasoningContent string     `json:"reasoning_content,omitempty"`
		Role             string     `json:"role"`
		ToolCallID       *string    `json:"tool_call_id,omitempty"`
		ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	}{ReasoningContent: m.Reasoning, Role: m.Role, ToolCalls: m.ToolCalls}
	switch {
	case m.Parts != nil:
		out.Content = m.Parts
	case m.Content != nil:
		out.Content = *m.Content
	}
	if m.Role == "tool" || m.ToolCallID != "" {
		out.ToolCallID = &m.ToolCallID
	}
	return json.Marshal(out)
}

// Part is one part of a message's content: text, or an image by URL (a
// data: URL for inline images).
type Part struct {
	// Type is "text" or "image_url".
	Type string
	// Text is a text part's text.
	Text string
	// ImageURL is an image part's URL.
	ImageURL string
}

// MarshalJSON writes the part as Chat Completions has it.
func (p Part) MarshalJSON() ([]byte, error) {
	if p.Type == "image_url" {
		return json.Marshal(map[string]any{"type": "image_url", "image_url": map[string]string{"url": p.ImageURL}})
	}
	return json.Marshal(map[string]string{"type": p.Type, "text": p.Text})
}

// ToolCall is one function call a model made.
type ToolCall struct {
	// ID pairs the call with its tool message.
	ID string
	// Name is the function's name.
	Name string
	// Arguments is a JSON object's text, as the model produced it.
	Arguments string
}

// MarshalJSON writes the call as Chat Completions has it.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	type fn struct {
		Arguments string `json:"arguments"`
		Name      string `json:"name"`
	}
	return json.Marshal(struct {
		Function fn     `json:"function"`
		ID       string `json:"id"`
		Type     string `json:"type"`
	}{fn{c.Arguments, c.Name}, c.ID, "function"})
}

// Tool is one function tool offered.
type Tool struct {
	// Name is the function's name.
	Name string
	// Description says what it does ("" leaves it out).
	Description string
	// Parameters is its JSON Schema (nil leaves it out).
	Parameters json.RawMessage
}

// MarshalJSON writes the tool as Chat Completions has it.
func (t Tool) MarshalJSON() ([]byte, error) {
	type fn struct {
		Description string          `json:"description,omitempty"`
		Name        string          `json:"name"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	return json.Marshal(struct {
		Function fn     `json:"function"`
		Type     string `json:"type"`
	}{fn{t.Description, t.Name, t.Parameters}, "function"})
}

// Completion is the engine's answer in the middle format, which every
// dialect encodes from.
type Completion struct {
	// ID is the engine's id of the answer.
	ID string
	// Model is the model that answered.
	Model string
	// Created is the answer's Unix time (0: now).
	Created int64
	// Text is the answer's text.
	Text string
	// Reasoning is the model's reasoning, if it gave any.
	Reasoning string
	// ToolCalls is the calls the model made.
	ToolCalls []ToolCall
	// FinishReason is Chat Completions' finish reason (stop, length,
	// tool_calls).
	FinishReason string
	// Usage is the call's token usage.
	Usage wire.TokenUsage
}

// Request is an agent's decoded generation request: the middle format it
// translates to, and what is recorded of it (llm_request), in the agent's
// own dialect.
type Request struct {
	// Chat is the request in the middle format.
	Chat ChatRequest
	// Model is the model the agent asked for.
	Model string
	// Stream says the agent wants a streamed answer.
	Stream bool
	// Messages is the conversation as the agent sent it.
	Messages json.RawMessage
	// Tools is the tools offered as the agent sent them.
	Tools json.RawMessage
	// Sampling is the sampling parameters the agent asked for.
	Sampling json.RawMessage
}

// OffersTools reports whether the request offers any tool.
func (r *Request) OffersTools() bool { return len(r.Chat.Tools) > 0 }

// compactObject returns a tool input as compact JSON object text ("{}"
// for none).
func compactObject(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	if raw[0] != '{' {
		return "", errNotObject
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// toolInput is a tool call's arguments as an input object ({} when the
// model produced something else).
func toolInput(args string) json.RawMessage {
	if s, err := compactObject(json.RawMessage(args)); err == nil && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return json.RawMessage("{}")
}

// set reports whether a JSON value is present and not null.
func set(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }
