package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// Name names an agent-side wire API.
type Name string

// The dialects the gateway speaks to agents.
const (
	// Chat is OpenAI Chat Completions (OpenCode, Goose, Qwen Code, pi).
	Chat Name = "openai-chat"
	// Responses is OpenAI Responses (Codex).
	Responses Name = "openai-responses"
	// Anthropic is Anthropic Messages (Claude Code).
	Anthropic Name = "anthropic"
	// Gemini is Google's generateContent (Gemini CLI).
	Gemini Name = "gemini"
)

// Names lists the dialects.
var Names = []Name{Chat, Responses, Anthropic, Gemini}

// Translator translates one request of its dialect: Decode reads it into
// the middle format and keeps the dialect's own state for the answer;
// Encode then writes the answer, WriteError a failure. A translator serves
// one request: make a fresh one with New for each.
type Translator interface {
	// Name is the translator's dialect.
	Name() Name
	// Decode reads a generation request (its path and query, and its
	// body); an error means the request is malformed (400).
	Decode(r *http.Request, body []byte) (*Request, error)
	// Encode writes the answer to the decoded request, streamed if the
	// agent asked; an error means the agent went away mid-answer.
	Encode(w http.ResponseWriter, c *Completion) error
	// WriteError answers a failure in the dialect's error shape.
	WriteError(w http.ResponseWriter, f Failure)
}

// New returns a fresh translator for dialect n; an unknown name gets Chat's.
func New(n Name) Translator {
	switch n {
	case Responses:
		return &responsesTranslator{}
	case Anthropic:
		return &anthropicTranslator{}
	case Gemini:
		return &geminiTranslator{}
	}
	return &chatTranslator{}
}

// Failure is an error the agent gets, in its dialect's shape: an HTTP
// status, what kind of error it is, and a message.
type Failure struct {
	// Status is the HTTP status.
	Status int
	// Kind picks the dialect's error type.
	Kind FailureKind
	// Message says what went wrong.
	Message string
}

// FailureKind classifies an error for the dialects' error types.
type FailureKind int

// Failure kinds.
const (
	FailInvalid     FailureKind = iota // malformed request (400)
	FailAuth                           // wrong or missing key (401)
	FailNotFound                       // no such route (404)
	FailMethod                         // wrong method (405)
	FailTooLarge                       // body over the bound (413)
	FailBudget                         // a budget ran out (429, not worth retrying)
	FailRateLimit                      // the upstream said 429
	FailUpstream                       // the upstream failed or answered garbage (502, retryable)
	FailUnavailable                    // the upstream is down (503, retryable)
	FailTimeout                        // the upstream was too slow (504, retryable)
)

var errNotObject = errors.New("not a JSON object")

// WriteJSON answers v as a JSON body with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "gateway: encode: "+err.Error(), http.StatusInternalServerError)
		return fmt.Errorf("encode answer: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeOpenAIError answers in OpenAI's error shape (Chat Completions and
// Responses).
func writeOpenAIError(w http.ResponseWriter, f Failure) {
	typ, code := "invalid_request_error", any(nil)
	switch f.Kind {
	case FailAuth:
		typ, code = "authentication_error", "invalid_api_key"
	case FailNotFound:
		code = "not_found"
	case FailBudget:
		typ, code = "insufficient_quota", "insufficient_quota"
	case FailRateLimit:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	case FailUpstream, FailUnavailable, FailTimeout:
		typ = "server_error"
	}
	WriteJSON(w, f.Status, map[string]any{"error": map[string]any{"message": f.Message, "type": typ, "param": nil, "code": code}})
}

// samplingKeys are the request fields recorded as sampling parameters.
// They are every field a sampling pin decides (gateway.Sampling) in Chat
// Completions' and the agents' dialects' names.
var samplingKeys = []string{
	"temperature", "top_p", "top_k", "min_p", "max_tokens", "max_completion_tokens", "max_output_tokens",
	"presence_penalty", "frequency_penalty", "repetition_penalty", "seed", "stop", "stop_sequences", "n",
	"logprobs", "top_logprobs", "return_token_ids",
	"logit_bias", "best_of", "use_beam_search", "length_penalty", "typical_p", "min_tokens", "ignore_eos",
	"bad_words", "allowed_token_ids", "stop_token_ids", "response_format", "guided_json", "guided_regex",
	"guided_choice", "guided_grammar", "guided_whitespace_pattern", "guided_decoding_backend",
	"structured_outputs", "regex", "json_schema", "ebnf", "logits_processors",
}

// PickSampling returns the sampling fields of a request object, or nil.
func PickSampling(fields map[string]json.RawMessage) json.RawMessage {
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

// withField adds field k = v to the JSON object sampling (nil: a new one).
func withField(sampling json.RawMessage, k string, v json.RawMessage) json.RawMessage {
	out := map[string]json.RawMessage{}
	json.Unmarshal(sampling, &out)
	out[k] = v
	b, _ := json.Marshal(out)
	return b
}

// model is the model an answer names: the one the agent asked for, else
// the engine's.
func model(asked string, c *Completion) string {
	if asked != "" {
		return asked
	}
	return c.Model
}

// sseWriter writes Server-Sent Events, flushing after each. The first
// error sticks and makes later writes no-ops.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf bytes.Buffer
	err error
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// event writes v as one event's JSON data; name "" omits the event: line.
func (s *sseWriter) event(name string, v any) {
	if s.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		s.err = fmt.Errorf("sse encode: %w", err)
		return
	}
	s.raw(name, string(b))
}

// raw writes one event with data as is.
func (s *sseWriter) raw(name, data string) {
	if s.err != nil {
		return
	}
	s.buf.Reset()
	if name != "" {
		s.buf.WriteString("event: " + name + "\n")
	}
	s.buf.WriteString("data: " + data + "\n\n")
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		s.err = fmt.Errorf("sse write: %w", err)
		return
	}
	if err := s.rc.Flush(); err != nil {
		s.err = fmt.Errorf("sse flush: %w", err)
	}
}

// pieceSize is the size of re-synthesised text deltas.
const pieceSize = 64

// pieces splits s into deltas of about pieceSize bytes on rune boundaries;
// "" gives none.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		i := min(pieceSize, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
