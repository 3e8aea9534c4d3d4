package exec

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/vt"
)

// parser reads one turn's stdout in one format. line gets each line and
// emits events; an error is a protocol violation that ends the turn.
// result reports the turn's response, whether the harness declared the task
// done, and protocol facts for TurnResult.Extra.
type parser interface {
	line(b []byte, emit func(harness.Event)) error
	result(emit func(harness.Event)) (response string, done bool, extra map[string]any)
}

// parsers make a parser per format.
var parsers = map[string]func() parser{
	FormatText:     func() parser { return &textParser{} },
	FormatJSONL:    func() parser { return &jsonlParser{} },
	FormatCodex:    func() parser { return &codexParser{calls: map[string]bool{}} },
	FormatGemini:   func() parser { return &geminiParser{tools: map[string]string{}} },
	FormatOpenCode: func() parser { return &openCodeParser{usage: map[string]any{}} },
}

func ev(t harness.EventType, data map[string]any) harness.Event {
	return harness.NewEvent(t, harness.SourceHarness, data)
}

func textEvent(s string) harness.Event { return ev(harness.EventTextOutput, map[string]any{"text": s}) }

// textParser: every stdout line, control sequences stripped, is text; the
// response is all of it.
type textParser struct{ lines []string }

func (p *textParser) line(b []byte, emit func(harness.Event)) error {
	s := vt.Strip(string(b))
	p.lines = append(p.lines, s)
	emit(textEvent(s))
	return nil
}

func (p *textParser) result(func(harness.Event)) (string, bool, map[string]any) {
	return strings.Trim(strings.Join(p.lines, "\n"), "\n"), false, nil
}

// jsonlParser: harnessd's line-protocol events, one turn per process. A
// {"type":"session","session_id":...} line names the session; turn_complete
// (optional: the process exit ends the turn) gives the response. A line
// that is not JSON is text; malformed JSON or an unknown event type is a
// protocol error.
type jsonlParser struct {
	texts    []string
	complete map[string]any
}

func (p *jsonlParser) line(b []byte, emit func(harness.Event)) error {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return nil
	}
	if t[0] != '{' {
		p.texts = append(p.texts, string(b))
		emit(textEvent(string(b)))
		return nil
	}
	var w struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(t, &w); err != nil {
		return harness.Fail(harness.ErrProtocol, "harness wrote malformed JSON: %v: %s", err, clip(t))
	}
	if w.Data == nil {
		w.Data = map[string]any{}
	}
	typ := harness.EventType(w.Type)
	switch {
	case w.Type == "session":
	case typ == harness.EventTurnComplete:
		p.complete = w.Data
	case typ.Valid():
		if typ == harness.EventTextOutput {
			if s, ok := w.Data["text"].(string); ok {
				p.texts = append(p.texts, s)
			}
		}
		emit(ev(typ, w.Data))
	default:
		return harness.Fail(harness.ErrProtocol, "harness wrote an event of unknown type %q", w.Type)
	}
	return nil
}

func (p *jsonlParser) result(func(harness.Event)) (string, bool, map[string]any) {
	if p.complete == nil {
		return strings.Join(p.texts, "\n"), false, nil
	}
	resp, _ := p.complete["response"].(string)
	done, _ := p.complete["done"].(bool)
	var extra map[string]any
	for k, v := range p.complete {
		if k != "response" && k != "done" && k != "cancelled" {
			if extra == nil {
				extra = map[string]any{}
			}
			extra[k] = v
		}
	}
	return resp, done, extra
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

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
