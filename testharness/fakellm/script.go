package fakellm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Script is an ordered list of rules. For each generation request the first
// rule whose When matches answers it; a request no rule matches gets the
// default behaviour. A nil or empty Script is all default:
//
//  1. the last message is a tool result -> text "MOCK-DONE: <tool result>";
//  2. no tools offered (an auxiliary call) -> text "MOCK-AUX";
//  3. the last user message contains "call NAME [JSON-object]" and an
//     offered tool matches NAME -> a call of that tool with the JSON object
//     as arguments ({} if none);
//  4. otherwise -> text "MOCK-REPLY: <last user message>".
//
// Scripts are read-only once handed to a Server.
//
// Example (JSON):
//
//	{"rules": [
//	  {"name": "after-tool", "when": {"tool_result": true},
//	   "reply": {"text": "final: {{tool_result}}"}},
//	  {"name": "title", "when": {"no_tools": true}, "reply": {"text": "A title"}},
//	  {"when": {"tool_offered": "harness_echo"},
//	   "reply": {"tool": "harness_echo", "arguments": {"text": "{{user}}"}}}
//	]}
type Script struct {
	Rules []Rule `json:"rules"`
}

// Rule is one "when this request looks like that, answer this" entry.
type Rule struct {
	// Name labels the rule in the request log; empty means "rule[i]".
	Name string `json:"name,omitempty"`
	// When holds the conditions; all given conditions must hold. An empty
	// When matches every request.
	When Match `json:"when"`
	// Reply is the answer.
	Reply Reply `json:"reply"`
}

// Match is a set of conditions on a generation request. Unset fields are
// not checked.
type Match struct {
	// ToolResult: true matches when the conversation's last message is a
	// tool result; false when it is not.
	ToolResult *bool `json:"tool_result,omitempty"`
	// UserContains matches when the last user text message contains this
	// text (case-sensitive). Tool-result messages are not user text.
	UserContains string `json:"user_contains,omitempty"`
	// SystemContains matches when the system prompt / instructions contain
	// this text.
	SystemContains string `json:"system_contains,omitempty"`
	// ToolOffered matches when an offered tool's name contains this text
	// (namespaced Responses tools are matched as NAMESPACE__NAME).
	ToolOffered string `json:"tool_offered,omitempty"`
	// NoTools: true matches requests that offer no tools (auxiliary calls
	// such as title generation); false matches requests offering any.
	NoTools *bool `json:"no_tools,omitempty"`
	// Nth matches the nth generation request (1-based) since the server
	// started or was last reset. count_tokens and model listings do not
	// count.
	Nth int `json:"nth,omitempty"`
	// Dialect matches one dialect: anthropic, openai-chat,
	// openai-responses or gemini.
	Dialect Dialect `json:"dialect,omitempty"`
	// Model matches when the requested model name contains this text.
	Model string `json:"model,omitempty"`
}

// Reply is what a rule answers. Text and tool calls may be combined (the
// text comes first). Error answers an HTTP error instead. Delay waits first
// (the wait ends early if the client disconnects); a Reply with only a Delay
// answers with the default behaviour after the wait. A Reply with nothing
// set answers with the default behaviour.
type Reply struct {
	// Text is the assistant text; it may use placeholders (see Expand).
	Text string `json:"text,omitempty"`
	// Tool asks for a call of an offered tool: the exact name, or a
	// substring resolved against the offered names (see resolveTool).
	Tool string `json:"tool,omitempty"`
	// Arguments are the call's arguments, a JSON object (default {}).
	// String values may use placeholders.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Calls asks for several (parallel) tool calls, after Tool if both are
	// given.
	Calls []Call `json:"calls,omitempty"`
	// Error answers an HTTP error in the dialect's error shape.
	Error *HTTPError `json:"error,omitempty"`
	// Delay waits this long before answering, e.g. "2s".
	Delay Duration `json:"delay,omitempty"`
}

// Call is one tool call of a Reply.
type Call struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// HTTPError is an error answer. Agents retry 429 and 5xx answers (often
// with back-off), so error-handling tests usually want a 4xx other than 429.
type HTTPError struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// Duration is a time.Duration that reads from JSON as a Go duration string
// ("1.5s", "200ms") or a number of seconds, and writes as a string.
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("delay %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("delay: want a duration string or seconds, got %s", b)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// ParseScript decodes and validates a script. Unknown fields are errors.
func ParseScript(data []byte) (*Script, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if dec.More() {
		return nil, errors.New("script: trailing data after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// LoadScript reads and parses a script file.
func LoadScript(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	return ParseScript(b)
}

// Validate checks every rule: known dialect, sane Nth, argument objects,
// error statuses, known placeholders, no Error combined with an answer.
func (s *Script) Validate() error {
	if s == nil {
		return nil
	}
	for i, r := range s.Rules {
		if err := r.validate(); err != nil {
			return fmt.Errorf("script: rule %s: %w", r.label(i), err)
		}
	}
	return nil
}

func (r Rule) label(i int) string {
	if r.Name != "" {
		return r.Name
	}
	return "rule[" + strconv.Itoa(i) + "]"
}

func (r Rule) validate() error {
	w := r.When
	if w.Dialect != "" && !knownDialect(w.Dialect) {
		return fmt.Errorf("unknown dialect %q", w.Dialect)
	}
	if w.Nth < 0 {
		return fmt.Errorf("nth must be >= 1, got %d", w.Nth)
	}
	rep := r.Reply
	if rep.Delay < 0 {
		return errors.New("delay must not be negative")
	}
	if err := checkTemplate(rep.Text); err != nil {
		return err
	}
	calls := rep.calls()
	for _, c := range calls {
		if c.Tool == "" {
			return errors.New("a call needs a tool name")
		}
		if _, err := expandArgs(c.Arguments, nil); err != nil {
			return err
		}
	}
	if len(rep.Arguments) > 0 && rep.Tool == "" {
		return errors.New("arguments given without tool")
	}
	if rep.Error != nil {
		if rep.Text != "" || len(calls) > 0 {
			return errors.New("error cannot be combined with text or tool calls")
		}
		if rep.Error.Status < 400 || rep.Error.Status > 599 {
			return fmt.Errorf("error status must be 400..599, got %d", rep.Error.Status)
		}
	}
	return nil
}

// calls returns Tool (if set) followed by Calls.
func (rep Reply) calls() []Call {
	var out []Call
	if rep.Tool != "" {
		out = append(out, Call{Tool: rep.Tool, Arguments: rep.Arguments})
	}
	return append(out, rep.Calls...)
}

// answersDefault reports whether the reply leaves the answer to the default
// behaviour (nothing but, at most, a delay).
func (rep Reply) answersDefault() bool {
	return rep.Text == "" && len(rep.calls()) == 0 && rep.Error == nil
}

// matches reports whether the request satisfies every condition of m.
func (m Match) matches(c *conversation, n int) bool {
	if m.ToolResult != nil && *m.ToolResult != c.lastIsToolResult() {
		return false
	}
	if m.UserContains != "" && !strings.Contains(c.lastUserText(), m.UserContains) {
		return false
	}
	if m.SystemContains != "" && !strings.Contains(c.system, m.SystemContains) {
		return false
	}
	if m.ToolOffered != "" {
		found := false
		for _, name := range c.toolNames() {
			if strings.Contains(name, m.ToolOffered) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if m.NoTools != nil && *m.NoTools != (len(c.tools) == 0) {
		return false
	}
	if m.Nth != 0 && m.Nth != n {
		return false
	}
	if m.Dialect != "" && m.Dialect != c.dialect {
		return false
	}
	if m.Model != "" && !strings.Contains(c.model, m.Model) {
		return false
	}
	return true
}
