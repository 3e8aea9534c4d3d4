package oneshot

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/clip"
	"github.com/harnessd/harnessd/internal/vt"
	"github.com/harnessd/harnessd/wire"
)

// parser reads one turn's stdout in one format. line gets each line and
// emits events; an error is a protocol violation that ends the turn.
// result reports the turn's response, whether the harness declared the task
// done, and protocol facts for TurnResult.Extra.
type parser interface {
	line(b []byte, emit func(wire.Event)) error
	result(emit func(wire.Event)) (response string, done bool, extra map[string]any)
}

// parsers make a parser per format.
var parsers = map[string]func() parser{
	FormatText:     func() parser { return &textParser{} },
	FormatJSONL:    func() parser { return &jsonlParser{} },
	FormatCodex:    func() parser { return &codexParser{calls: map[string]bool{}} },
	FormatGemini:   func() parser { return &geminiParser{tools: map[string]string{}} },
	FormatOpenCode: func() parser { return &openCodeParser{usage: map[string]any{}} },
}

// ev returns an event of the harness's own account.
func ev(p wire.Payload) wire.Event { return wire.New(wire.OriginHarness, p) }

func textEvent(s string) wire.Event { return wire.Text(wire.OriginHarness, s) }

// toolCall is a harness's tool_call; args are decoded JSON values.
func toolCall(name string, args any, id string) *wire.ToolCall {
	return &wire.ToolCall{ToolName: name, Arguments: wire.RawJSON(args), CallID: id}
}

// chunks numbers a turn's llm_chunk events (their 0-based index).
type chunks struct{ n int }

// chunk returns the turn's next chunk.
func (c *chunks) chunk(content string, thought bool) *wire.LLMChunk {
	ch := &wire.LLMChunk{Content: content, Index: c.n, Thought: thought}
	c.n++
	return ch
}

// errorText is a tool result's error from a decoded JSON value: nil for
// none, the text of a string, else the value's JSON.
func errorText(v any) *string {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return &v
	}
	s := string(wire.RawJSON(v))
	return &s
}

// joinedLines joins a turn's lines with newlines as they come: it holds their
// bytes, not a string per line (a 16-byte header for a 1-byte line held
// a flood of short lines at 16 times its size).
type joinedLines struct {
	b strings.Builder
	n int
}

func (l *joinedLines) add(s string) {
	if l.n > 0 {
		l.b.WriteByte('\n')
	}
	l.b.WriteString(s)
	l.n++
}

func (l *joinedLines) String() string { return l.b.String() }

// textParser: every stdout line, control sequences stripped, is text; the
// response is all of it.
type textParser struct{ lines joinedLines }

func (p *textParser) line(b []byte, emit func(wire.Event)) error {
	s := vt.Strip(string(b))
	p.lines.add(s)
	emit(textEvent(s))
	return nil
}

func (p *textParser) result(func(wire.Event)) (string, bool, map[string]any) {
	return strings.Trim(p.lines.String(), "\n"), false, nil
}

// jsonlParser: harnessd's line-protocol events, one turn per process. A
// {"type":"session","session_id":...} line names the session; turn_complete
// (optional: the process exit ends the turn) gives the response. A line
// that is not JSON is text; malformed JSON or an unknown event type is a
// protocol error.
type jsonlParser struct {
	texts    joinedLines
	complete *wire.TurnComplete
}

func (p *jsonlParser) line(b []byte, emit func(wire.Event)) error {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return nil
	}
	if t[0] != '{' {
		p.texts.add(string(b))
		emit(textEvent(string(b)))
		return nil
	}
	var w struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(t, &w); err != nil {
		return harness.Fail(wire.FailureProtocol, "harness wrote malformed JSON: %v: %s", err, clip.Bytes(t))
	}
	typ := wire.EventType(w.Type)
	switch {
	case w.Type == "session":
		return nil
	case !typ.Valid():
		return harness.Fail(wire.FailureProtocol, "harness wrote an event of unknown type %q", w.Type)
	}
	pl, err := wire.DecodeChecked(typ, w.Data)
	if err != nil {
		return harness.Fail(wire.FailureProtocol, "harness wrote a bad %s event: %v (see docs/protocol.md): %s", typ, err, clip.Bytes(t))
	}
	switch pl := pl.(type) {
	case *wire.TurnComplete:
		p.complete = pl
		return nil
	case *wire.TextOutput:
		p.texts.add(pl.Text)
	}
	emit(ev(pl))
	return nil
}

func (p *jsonlParser) result(func(wire.Event)) (string, bool, map[string]any) {
	if p.complete == nil {
		return p.texts.String(), false, nil
	}
	// The extra values are decoded into Go values up to wire.PlainLimit in
	// all, in key order, and kept as raw JSON beyond (decoded, a line of
	// [0,0,...] costs 40 times its size).
	var extra map[string]any
	budget := wire.PlainBudget(wire.PlainLimit)
	for _, k := range slices.Sorted(maps.Keys(p.complete.Extra)) {
		v := p.complete.Extra[k]
		if extra == nil {
			extra = map[string]any{}
		}
		if raw, ok := v.(json.RawMessage); ok {
			if d := budget.Decode(raw); d != nil || string(bytes.TrimSpace(raw)) == "null" {
				v = d
			}
		}
		extra[k] = v
	}
	return p.complete.Response, p.complete.Done, extra
}

// segments collects an agent's text between tool calls; the response of a
// turn is the last non-empty segment, the agent's final words.
type segments struct {
	cur  []string
	last string
}

func (s *segments) add(t string) { s.cur = append(s.cur, t) }

// cut ends the current segment at a tool call.
func (s *segments) cut(sep string) {
	if t := strings.Join(s.cur, sep); strings.TrimSpace(t) != "" {
		s.last = t
	}
	s.cur = nil
}

func (s *segments) final(sep string) string {
	s.cut(sep)
	return s.last
}

// object decodes a JSON object line, or reports it is not one.
func object(b []byte) (map[string]any, bool) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(t, &m) != nil {
		return nil, false
	}
	return m, true
}

// get follows a dotted path through nested objects.
func get(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = obj[k]
	}
	return v
}

func str(m map[string]any, path string) string {
	s, _ := get(m, path).(string)
	return s
}

func obj(m map[string]any, path string) map[string]any {
	o, _ := get(m, path).(map[string]any)
	return o
}

// contentText joins the text items of an MCP content list.
func contentText(v any) string {
	items, ok := v.([]any)
	if !ok {
		if s, ok := v.(string); ok {
			return s
		}
		return ""
	}
	var parts []string
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			if s, ok := m["text"].(string); ok {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n")
}
