package wire

import "encoding/json"

// Payload is the data of an event: one of the payload types below, each of
// which names its event type.
type Payload interface {
	EventType() EventType
}

// NewPayload returns a new zero payload for an event of type t (*Unknown
// for a type this version does not know).
func NewPayload(t EventType) Payload {
	switch t {
	case EventTextOutput:
		return &TextOutput{}
	case EventToolCall:
		return &ToolCall{}
	case EventToolResult:
		return &ToolResult{}
	case EventLLMRequest:
		return &LLMRequest{}
	case EventLLMResponse:
		return &LLMResponse{}
	case EventLLMChunk:
		return &LLMChunk{}
	case EventError:
		return &Error{}
	case EventTurnComplete:
		return &TurnComplete{}
	case EventEgress:
		return &Egress{}
	case EventEnv:
		return &EnvEvent{}
	}
	return &Unknown{Type: t}
}

// Extra is the part of a payload this schema does not name: facts a
// producer adds (an ACP tool call's title and kind, a Claude event's parent
// tool use). Keys that the payload type names are never taken from Extra.
// Values decoded from JSON are json.RawMessage, so nothing is lost or
// reinterpreted on the way through.
type Extra map[string]any

// TextOutput is text the harness printed (text_output).
type TextOutput struct {
	// Text is the text, one line or block as the harness wrote it.
	Text string `json:"text" wire:"required"`
	// Extra holds fields beyond the schema.
	Extra Extra `json:"-"`
}

// ToolCall is a tool call (tool_call). From the bridge (origin "bridge") it
// is the authoritative record of a call to one of the environment's tools;
// from the harness it is the harness's own account, which may also name
// tools of its own.
type ToolCall struct {
	// ToolName is the tool's name as the harness called it.
	ToolName string `json:"tool_name" wire:"required"`
	// Arguments is the call's arguments, a JSON object ({} when absent).
	Arguments json.RawMessage `json:"arguments"`
	// CallID pairs the call with its tool_result, when the producer knows it.
	CallID string `json:"call_id,omitempty"`
	// Server names the MCP server of the tool, when the harness says so.
	Server string `json:"server,omitempty"`
	// UpstreamName is the tool's name at its source, when the bridge renamed
	// it (bridge only).
	UpstreamName string `json:"upstream_name,omitempty"`
	// ToolSource names the configured tool source serving it (bridge only).
	ToolSource string `json:"tool_source,omitempty"`
	// Extra holds fields beyond the schema.
	Extra Extra `json:"-"`
}

// ToolResult is the outcome of a tool call (tool_result).
type ToolResult struct {
	// ToolName is the tool's name as the harness called it.
	ToolName string `json:"tool_name" wire:"required"`
	// Result is the tool's output: its text, structured content, or null
	// when the call failed before producing any.
	Result any `json:"result"`
	// Error is null for a successful call, else what went wrong (a tool that
	// reported an error has its text here as well as in Result).
	Error *string `json:"error"`
	// CallID pairs the result with its tool_call, when the producer knows it.
	CallID string `json:"call_id,omitempty"`
	// DurationMS is how long the call took in milliseconds (bridge only).
	DurationMS *float64 `json:"duration_ms,omitempty"`
	// UpstreamName is the tool's name at its source (bridge only).
	UpstreamName string `json:"upstream_name,omitempty"`
	// ToolSource names the configured tool source (bridge only).
	ToolSource string `json:"tool_source,omitempty"`
	// StructuredContent is the tool's structured result, if it gave one.
	StructuredContent any `json:"structured_content,omitempty"`
	// Extra holds fields beyond the schema.
	Extra Extra `json:"-"`
}

// LLMRequest is a request to a language model (llm_request).
type LLMRequest struct {
	// Model is the model asked for.
	Model string `json:"model,omitempty"`
	// Messages is the conversation sent, a JSON list in the caller's
	// dialect: all of it, or, when MessagesFrom is above 0, only the
	// messages after the first MessagesFrom (CallMessages puts them back).
	Messages json.RawMessage `json:"messages,omitempty"`
	// CallIndex is the 1-based index of the call in its episode (gateway
	// only); it pairs the request with its llm_response.
	CallIndex int `json:"call_index,omitempty"`
	// MessagesCallIndex is the call of the episode whose llm_request, the
	// one the gateway emitted before this one, holds the leading messages
	// Messages leaves out (gateway only; 0 when MessagesFrom is 0).
	MessagesCallIndex int `json:"messages_call_index,omitempty"`
	// MessagesFrom is how many leading messages Messages leaves out: all of
	// call MessagesCallIndex's messages (0: Messages is the whole
	// conversation, as when the client asks for full_token_ids).
	MessagesFrom int `json:"messages_from,omitempty"`
	// Dialect is the caller's wire API: openai-chat, openai-responses,
	// anthropic or gemini (gateway only).
	Dialect string `json:"dialect,omitempty"`
	// Stream says the caller asked for a streamed answer (gateway only).
	Stream bool `json:"stream,omitempty"`
	// Tools is the tool list offered, in the caller's dialect (gateway only).
	Tools json.RawMessage `json:"tools,omitempty"`
	// Sampling is the sampling parameters the caller asked for (gateway
	// only): temperature, top_p, max_tokens, ...
	Sampling json.RawMessage `json:"sampling,omitempty"`
	// EffectiveSampling is the sampling parameters sent upstream after the
	// gateway's caps and injections (gateway only).
	EffectiveSampling json.RawMessage `json:"effective_sampling,omitempty"`
	// Extra holds fields beyond the schema.
	Extra Extra `json:"-"`
}

// LLMResponse is a language model's answer (llm_response).
type LLMResponse struct {
	// Content is the answer: its text, or a JSON list of content blocks.
	Content any `json:"content"`
	// Model is the model that answered, when known.
	Model string `json:"model,omitempty"`
	// FinishReason says why generation stopped (stop, length, tool_calls, ...).
	FinishReason string `json:"finish_reason,omitempty"`
	// Usage is the call's token usage: the gateway's in the OpenAI spelling
	// whatever the upstream's dialect; a harness's own as it reported it.
	Usage *TokenUsage `json:"usage,omitempty"`
	// CallIndex pairs the response with its llm_request (gateway only).
	CallIndex int `json:"call_index,omitempty"`
	// Dialect is the caller's wire API (gateway only).
	Dialect string `json:"dialect,omitempty"`
	// Traffic is "training" for an engine's answer with token ids, or
	// "evaluation" for a provider's answer without them (gateway only).
	Traffic string `json:"traffic,omitempty"`
	// PromptTokenIDs is the engine's token ids of the prompt it conditioned
	// on (gateway, engine upstream only): all of them, or, when
	// PromptTokenIDsFrom is above 0, only those from that position on (the
	// ones before it are the parent call's prompt+completion ids;
	// CallTokenIDs puts them back).
	PromptTokenIDs []int `json:"prompt_token_ids,omitempty"`
	// ParentCallIndex is the call whose prompt+completion ids are the
	// longest exact prefix of this call's prompt ids, among the calls
	// recorded before it (0: none; gateway, engine upstream only).
	ParentCallIndex int `json:"parent_call_index,omitempty"`
	// PromptTokenIDsFrom is how many leading prompt ids PromptTokenIDs
	// leaves out: the parent's prompt+completion ids, which an earlier
	// llm_response of the episode carries (0: PromptTokenIDs is the whole
	// prompt, as when the client asks for full_token_ids).
	PromptTokenIDsFrom int `json:"prompt_token_ids_from,omitempty"`
	// CompletionTokenIDs is the engine's sampled token ids (gateway, engine
	// upstream only).
	CompletionTokenIDs []int `json:"completion_token_ids,omitempty"`
	// Logprobs is the behaviour logprob of each completion token, aligned
	// with CompletionTokenIDs (gateway, engine upstream only).
	Logprobs []float64 `json:"logprobs,omitempty"`
	// LatencyMS is the upstream call's duration in milliseconds (gateway only).
	LatencyMS *float64 `json:"latency_ms,omitempty"`
	// Status is the HTTP status the caller got, when it was not 200
	// (gateway only).
	Status int `json:"status,omitempty"`
	// Error says why the call failed: upstream down or garbled, budget
	// exhausted (gateway only; "" for a successful call).
	Error string `json:"error,omitempty"`
	// Extra holds fields beyond the schema.
	Extra Extra `json:"-"`
}

// LLMChunk is a piece of a streamed model answer (llm_chunk).
type LLMChunk struct {
	// Content is the chunk's text ("" for a chunk that carries something else).
	Content string `json:"content"`
	// Index is the chunk's 0-based position in the turn.
	Index int `json:"index"`
	// Thought marks reasoning text rather than answer text.
	Thought bool `json:"thought,omitempty"`
	// MessageID names the message the chunk belongs to, when known.
	MessageID string `json:"message_id,omitempty"`
	// Extra holds fields beyond the schema.
	Extra Extra `json:"-"`
}

// Error reports a failure (error). A recoverable error leaves the turn
// running; harnessd's own terminal errors are not recoverable.
type Error struct {
	// Message says what went wrong.
	Message string `json:"message" wire:"required"`
	// Recoverable says the turn goes on despite it.
	Recoverable bool `json:"recoverable"`
	// Extra holds fields beyond the schema.
	Extra Extra `json:"-"`
}

// TurnComplete ends a turn (turn_complete).
type TurnComplete struct {
	// Response is the final text of the turn.
	Response string `json:"response"`
	// Done says the harness considers the task complete.
	Done bool `json:"done"`
	// Cancelled says the turn ended early because it was interrupted.
	Cancelled bool `json:"cancelled,omitempty"`
	// Extra holds fields beyond the schema (adapters add the turn's stop
	// reason, usage, cost).
	Extra Extra `json:"-"`
}

// Permission is one permission request a harness made during a turn (an
// ACP agent asks before it runs a tool) and harnessd's answer. A turn's
// requests are listed under "permissions" in its turn_complete extra.
type Permission struct {
	// CallID is the tool call the request is about.
	CallID string `json:"call_id"`
	// Title is the agent's title of the call.
	Title string `json:"title"`
	// ToolName is the tool's name, when the agent said it.
	ToolName string `json:"tool_name,omitempty"`
	// Decision is "allowed", "denied" or "cancelled".
	Decision string `json:"decision"`
	// OptionID is the agent's option harnessd picked, if any.
	OptionID string `json:"option_id,omitempty"`
}

// Unknown is the data of an event whose type this version does not know,
// kept as it came.
type Unknown struct {
	// Type is the event's type.
	Type EventType `json:"-"`
	// Raw is the data object.
	Raw json.RawMessage `json:"-"`
}

// EventType implements Payload.
func (*TextOutput) EventType() EventType { return EventTextOutput }

// EventType implements Payload.
func (*ToolCall) EventType() EventType { return EventToolCall }

// EventType implements Payload.
func (*ToolResult) EventType() EventType { return EventToolResult }

// EventType implements Payload.
func (*LLMRequest) EventType() EventType { return EventLLMRequest }

// EventType implements Payload.
func (*LLMResponse) EventType() EventType { return EventLLMResponse }

// EventType implements Payload.
func (*LLMChunk) EventType() EventType { return EventLLMChunk }

// EventType implements Payload.
func (*Error) EventType() EventType { return EventError }

// EventType implements Payload.
func (*TurnComplete) EventType() EventType { return EventTurnComplete }

// EventType implements Payload.
func (u *Unknown) EventType() EventType { return u.Type }

// EventType implements Payload.
func (*Egress) EventType() EventType { return EventEgress }

// Egress is one connection a sandboxed harness made through the daemon's
// egress proxy (egress; origin "daemon"), whether it was allowed or not.
type Egress struct {
	// Method is CONNECT (a tunnel, e.g. HTTPS) or HTTP (a forwarded
	// plain-HTTP request).
	Method string `json:"method" wire:"required"`
	// Host and Port are the destination the harness asked for.
	Host string `json:"host" wire:"required"`
	Port int    `json:"port,omitempty"`
	// Allowed says the destination passed network.allow and the address
	// guard.
	Allowed bool `json:"allowed"`
	// Reason says why it was refused or failed ("" when it went through).
	Reason string `json:"reason,omitempty"`
	// Status is the HTTP status the harness got.
	Status int `json:"status,omitempty"`
	// Address is the address dialled ("" when none was).
	Address string `json:"address,omitempty"`
	// BytesUp and BytesDown count what went to and came from the
	// destination.
	BytesUp   int64 `json:"bytes_up,omitempty"`
	BytesDown int64 `json:"bytes_down,omitempty"`
	// DurationMS is how long the connection lasted.
	DurationMS float64 `json:"duration_ms,omitempty"`
	// Extra holds fields beyond the schema.
	Extra Extra `json:"-"`
}

// ErrorEvent returns a non-recoverable error event from origin, stamped now.
func ErrorEvent(origin Origin, message string, recoverable bool) Event {
	return New(origin, &Error{Message: message, Recoverable: recoverable})
}

// Text returns a text_output event from origin, stamped now.
func Text(origin Origin, text string) Event {
	return New(origin, &TextOutput{Text: text})
}
