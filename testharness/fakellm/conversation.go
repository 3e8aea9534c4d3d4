package fakellm

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Dialect names a wire API the server speaks.
type Dialect string

// The dialects the server speaks.
const (
	Anthropic       Dialect = "anthropic"
	OpenAIChat      Dialect = "openai-chat"
	OpenAIResponses Dialect = "openai-responses"
	Gemini          Dialect = "gemini"
)

// knownDialect reports whether d names a dialect the server speaks.
func knownDialect(d Dialect) bool {
	switch d {
	case Anthropic, OpenAIChat, OpenAIResponses, Gemini:
		return true
	}
	return false
}

// tool is one tool a request offers to the model.
type tool struct {
	name      string // the name the model must call it by
	namespace string // Responses namespace tool holding it, or ""
	custom    bool   // Responses freeform "custom" tool (answered with custom_tool_call)
}

// fullName is the name scripts match against: the namespace joined to the
// name for namespaced tools (mcp__S + T -> mcp__S__T), else the name.
func (t tool) fullName() string {
	switch {
	case t.namespace == "":
		return t.name
	case strings.HasSuffix(t.namespace, "_"):
		return t.namespace + t.name
	default:
		return t.namespace + "__" + t.name
	}
}

// Roles of a normalized message.
const (
	roleSystem    = "system"
	roleUser      = "user"
	roleAssistant = "assistant"
	roleTool      = "tool"
)

// message is one turn of a conversation reduced to what scripts look at.
type message struct {
	role        string
	text        string   // text parts joined by "\n" (agent-injected context parts dropped for user messages)
	toolResults []string // text of each tool result the message carries
	toolCalls   []string // names of the tool calls an assistant message made
}

// conversation is one generation request in dialect-neutral form.
type conversation struct {
	dialect    Dialect
	model      string
	stream     bool
	system     string
	tools      []tool
	messages   []message
	inputChars int // request body size, for usage estimates

	// dialect-specific framing details
	includeUsage bool // OpenAI chat: stream_options.include_usage
	geminiSSE    bool // Gemini streamGenerateContent with alt=sse
}

// last returns the last message that is not a system message, or nil.
func (c *conversation) last() *message {
	for i := len(c.messages) - 1; i >= 0; i-- {
		if c.messages[i].role != roleSystem {
			return &c.messages[i]
		}
	}
	return nil
}

// lastIsToolResult reports whether the conversation's last message carries
// tool results.
func (c *conversation) lastIsToolResult() bool {
	m := c.last()
	return m != nil && (m.role == roleTool || len(m.toolResults) > 0)
}

// lastToolResults returns the tool results of the last message, joined by
// "\n", if it carries any. Consecutive tool messages at the end (one per
// parallel call in the OpenAI dialects) are all included.
func (c *conversation) lastToolResults() string {
	var parts []string
	for i := len(c.messages) - 1; i >= 0; i-- {
		m := c.messages[i]
		if m.role == roleSystem {
			continue
		}
		if len(m.toolResults) == 0 {
			break
		}
		parts = append(append([]string{}, m.toolResults...), parts...)
		if m.role != roleTool {
			break
		}
	}
	return strings.Join(parts, "\n")
}

// userTexts returns the text of every user message that has text and
// carries no tool result, in order.
func (c *conversation) userTexts() []string {
	var out []string
	for _, m := range c.messages {
		if m.role == roleUser && m.text != "" && len(m.toolResults) == 0 {
			out = append(out, m.text)
		}
	}
	return out
}

// lastUserText returns the text of the last user message that has text.
func (c *conversation) lastUserText() string {
	u := c.userTexts()
	if len(u) == 0 {
		return ""
	}
	return u[len(u)-1]
}

// allToolResults returns every tool result in the conversation, in order.
func (c *conversation) allToolResults() []string {
	var out []string
	for _, m := range c.messages {
		out = append(out, m.toolResults...)
	}
	return out
}

// toolNames returns the full names of the offered tools.
func (c *conversation) toolNames() []string {
	out := make([]string, len(c.tools))
	for i, t := range c.tools {
		out[i] = t.fullName()
	}
	return out
}

// injected matches a text part that is one XML-ish element, the way agents
// inject context into user messages (<system-reminder>, <environment_context>).
var injected = regexp.MustCompile(`(?s)^<([A-Za-z][A-Za-z0-9_-]*)[^>]*>.*</([A-Za-z][A-Za-z0-9_-]*)>$`)

// userText joins the text parts of a user message, dropping parts that are
// agent-injected context (one <tag>…</tag> element, e.g. Claude Code's
// <system-reminder>, Gemini CLI's <session_context>, Codex's
// <environment_context>) and unquoting a part that is one whole JSON string
// literal (OpenCode's run command sends the message that way). A message
// that is only injected context has no user text.
func userText(parts []string) string {
	var kept []string
	for _, p := range parts {
		t := strings.TrimSpace(p)
		if m := injected.FindStringSubmatch(t); m != nil && m[1] == m[2] {
			continue
		}
		if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
			var s string
			if json.Unmarshal([]byte(t), &s) == nil {
				p = s
			}
		}
		if t != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "\n")
}

// flexText extracts the human-readable text of a JSON value that carries
// content in any of the shapes the dialects use: a string; an array of
// blocks/parts; an object with text, output, content or result. Other
// values are rendered as compact JSON.
func flexText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) == nil {
			var parts []string
			for _, it := range items {
				if t := flexText(it); t != "" {
					parts = append(parts, t)
				}
			}
			return strings.Join(parts, "\n")
		}
	case '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			for _, k := range []string{"text", "output", "content", "result", "llmContent"} {
				if v, ok := obj[k]; ok {
					return flexText(v)
				}
			}
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// joinNonEmpty joins the non-empty strings with "\n".
func joinNonEmpty(parts []string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "\n")
}

// codexPreamble is the timing header Codex puts before an MCP tool's output.
var codexPreamble = regexp.MustCompile(`^(?:Exit code: -?\d+\n)?Wall time: [^\n]*\nOutput:(?:\n|$)`)

// cleanToolResult removes the wrappers agents put around a tool's own
// output, so the same tool result reads the same through every agent:
// Codex's "Wall time: … seconds\nOutput:" preamble and one element
// enclosing the whole text (Gemini CLI's <untrusted_context>…</…>).
func cleanToolResult(s string) string {
	s = codexPreamble.ReplaceAllString(s, "")
	t := strings.TrimSpace(s)
	if m := injected.FindStringSubmatch(t); m != nil && m[1] == m[2] {
		open := strings.Index(t, ">") + 1
		inner := t[open : len(t)-len("</"+m[2]+">")]
		if !strings.Contains(inner, "<"+m[1]) { // a single element, not <a>..</a><a>..</a>
			return strings.TrimSpace(inner)
		}
	}
	return s
}
