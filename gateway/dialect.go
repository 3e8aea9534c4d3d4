package gateway

import (
	"encoding/json"
	"net/http"
)

// Dialect names an agent-side wire API.
type Dialect string

// The dialects the gateway speaks to agents.
const (
	DialectChat Dialect = "openai-chat"
)

// dialect is one agent-side wire API: how to read its requests, write its
// answers and its errors.
type dialect struct {
	name Dialect
	// decode reads a generation request and translates it to the engine's
	// chat completions; errors mean 400.
	decode func(r *http.Request, body []byte) (*agentRequest, error)
	// encode writes the answer in the dialect, streamed as SSE if the
	// agent asked; an error means the agent went away mid-answer.
	encode func(w http.ResponseWriter, req *agentRequest, c *completion) error
	// writeError answers a failure in the dialect's error shape.
	writeError func(w http.ResponseWriter, f failure)
}

// agentRequest is an agent's generation request: what is recorded of it,
// and the engine request it translates to.
type agentRequest struct {
	model    string          // the model the agent asked for
	stream   bool            // the agent wants SSE
	messages json.RawMessage // the conversation, in the agent's dialect
	tools    json.RawMessage // the tools offered, in the agent's dialect
	sampling json.RawMessage // the sampling parameters the agent asked for
	// chat is the engine request (Chat Completions) before the gateway's
	// hygiene, caps and injections.
	chat map[string]json.RawMessage
	// includeUsage: a Chat Completions stream ends with a usage chunk.
	includeUsage bool
	// geminiSSE: a Gemini stream asked for SSE (alt=sse), not a JSON array.
	geminiSSE bool
	// namespaced maps the flat names of Responses tools offered inside a
	// namespace tool to their namespace and own name.
	namespaced map[string]namespacedTool
}

// offersTools reports whether the request offers any tool.
func (r *agentRequest) offersTools() bool { return nonEmptyList(r.chat["tools"]) }

// nonEmptyList reports whether raw is a JSON list with at least one item.
func nonEmptyList(raw json.RawMessage) bool {
	var items []json.RawMessage
	return json.Unmarshal(raw, &items) == nil && len(items) > 0
}

// samplingKeys are the request fields recorded as sampling parameters.
var samplingKeys = []string{
	"temperature", "top_p", "top_k", "min_p", "max_tokens", "max_completion_tokens", "max_output_tokens",
	"presence_penalty", "frequency_penalty", "repetition_penalty", "seed", "stop", "stop_sequences", "n",
	"logprobs", "top_logprobs", "return_token_ids",
}

// pickSampling returns the sampling fields of a request object, or nil.
func pickSampling(fields map[string]json.RawMessage) json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, k := range samplingKeys {
		if v, ok := fields[k]; ok && string(v) != "null" {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	b, _ := json.Marshal(out)
	return b
}
