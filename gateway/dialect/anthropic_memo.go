package dialect

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// anthropicEntry is what decoding an Anthropic Messages request learnt, for
// the next request of the conversation: the system prompt and each message
// as sent, what they translate to, and that compacted as encoding/json
// writes it. Claude Code moves its cache_control marker from message to
// message between turns, so the next request's bytes are no prefix of
// these, but its messages are most often these messages, one by one.
type anthropicEntry struct {
	sys   []byte // the system value as sent (nil: absent)
	sysMs []Message
	sysJS []byte // sysMs compacted, joined by commas
	elems []anthropicElem
}

// anthropicElem is one message of a request: as sent, translated and
// compacted.
type anthropicElem struct {
	raw  []byte
	msgs []Message
	js   []byte // msgs compacted, joined by commas
}

// anthropicKeys are the members anthropicRequest reads. encoding/json
// matches a member to them whatever its case; the split decode reads them
// by their exact names, so any other spelling is left to the full decode.
var anthropicKeys = []string{"model", "system", "messages", "tools", "tool_choice", "max_tokens",
	"temperature", "top_p", "top_k", "stop_sequences", "stream"}

func (m *Memo) anthropic() anthropicEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.anth
}

func (m *Memo) keepAnthropic(e anthropicEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.anth = e
}

// UseMemo implements Memoizer.
func (t *anthropicTranslator) UseMemo(m *Memo) { t.memo = m }

// decodeContinued decodes body message by message: a message whose bytes
// are those of the remembered request's message at its index is taken as
// it was translated then, the others are decoded alone, and the top-level
// members are split without a decoder. The result is the full decode's
// (TestAnthropicMemoDecode); any doubt is an error, and the full decode
// then decides. The request's compacted messages are joined from each
// message's.
func (t *anthropicTranslator) decodeContinued(body []byte) (*Request, error) {
	last := t.memo.anthropic()
	var elems []anthropicElem
	fields, err := splitMembers(body, "messages", func(i int) (end int, err error) {
		elems, end, err = anthropicElems(body, i, last.elems)
		return end, err
	})
	if err != nil || len(elems) == 0 {
		return nil, errMiss
	}
	in, err := anthropicFields(fields)
	if err != nil {
		return nil, errMiss
	}
	e := anthropicEntry{sys: fields["system"], elems: elems}
	if last.elems != nil && bytes.Equal(e.sys, last.sys) {
		e.sysMs, e.sysJS = last.sysMs, last.sysJS
	} else if e.sysMs, err = anthropicSystem(in.System); err != nil {
		return nil, errMiss
	} else if e.sysJS, err = compactMessages(e.sysMs); err != nil {
		return nil, errMiss
	}
	req, err := t.finish(fields, &in, e.messages())
	if err != nil {
		return nil, errMiss
	}
	if req.Chat.Messages != nil { // none is written as null, by the general path
		req.Chat.compactOpen = e.compactOpen()
	}
	t.memo.keepAnthropic(e)
	return req, nil
}

// messages is the request's translated messages.
func (e *anthropicEntry) messages() []Message {
	n := len(e.sysMs)
	for _, el := range e.elems {
		n += len(el.msgs)
	}
	if n == 0 {
		return nil // as the full decode leaves it
	}
	out := make([]Message, 0, n)
	out = append(out, e.sysMs...)
	for _, el := range e.elems {
		out = append(out, el.msgs...)
	}
	return out
}

// compactOpen is the request's translated messages as json.Marshal writes
// the list, without the closing bracket.
func (e *anthropicEntry) compactOpen() []byte {
	n := 1 + len(e.sysJS)
	for _, el := range e.elems {
		n += 1 + len(el.js)
	}
	out := append(make([]byte, 0, n), '[')
	for _, js := range append([][]byte{e.sysJS}, jsOf(e.elems)...) {
		if len(js) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, js...)
	}
	return out
}

func jsOf(elems []anthropicElem) [][]byte {
	out := make([][]byte, len(elems))
	for i, el := range elems {
		out[i] = el.js
	}
	return out
}

// anthropicFields reads the typed fields of a request split into fields,
// as encoding/json reads them into anthropicRequest; a member it would
// match otherwise (another case) is an error.
func anthropicFields(fields map[string]json.RawMessage) (anthropicRequest, error) {
	var in anthropicRequest
	for k := range fields {
		if !slices.Contains(anthropicKeys, k) && slices.ContainsFunc(anthropicKeys, func(f string) bool { return strings.EqualFold(k, f) }) {
			return in, errMiss
		}
	}
	if v, ok := fields["model"]; ok && json.Unmarshal(v, &in.Model) != nil {
		return in, errMiss
	}
	if v, ok := fields["stream"]; ok && json.Unmarshal(v, &in.Stream) != nil {
		return in, errMiss
	}
	in.System, in.Messages, in.Tools, in.ToolChoice = fields["system"], fields["messages"], fields["tools"], fields["tool_choice"]
	in.MaxTokens, in.Temperature, in.TopP, in.TopK = fields["max_tokens"], fields["temperature"], fields["top_p"], fields["top_k"]
	in.StopSequences = fields["stop_sequences"]
	return in, nil
}

// anthropicElems reads the messages list at body[i]: a message that is the
// bytes of prev's at its index is prev's, any other is decoded alone. It
// returns the messages and the index after the list.
func anthropicElems(body []byte, i int, prev []anthropicElem) ([]anthropicElem, int, error) {
	if i >= len(body) || body[i] != '[' {
		return nil, 0, errMiss
	}
	var out []anthropicElem
	for j := skipSpace(body, i+1); j < len(body); {
		el, end, err := anthropicElemAt(body, j, len(out), prev)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, el)
		j = skipSpace(body, end)
		switch {
		case j < len(body) && body[j] == ']':
			return out, j + 1, nil
		case j < len(body) && body[j] == ',':
			j = skipSpace(body, j+1)
		default:
			return nil, 0, errMiss
		}
	}
	return nil, 0, errMiss
}

// anthropicElemAt reads message k of a list, starting at body[j]: prev's
// message k when the bytes there are its bytes and end there, else the
// message decoded alone.
func anthropicElemAt(body []byte, j, k int, prev []anthropicElem) (anthropicElem, int, error) {
	if k < len(prev) && bytes.HasPrefix(body[j:], prev[k].raw) {
		end := j + len(prev[k].raw)
		if next := skipSpace(body, end); next < len(body) && (body[next] == ',' || body[next] == ']') {
			return prev[k], end, nil
		}
	}
	end, err := skipValue(body, j)
	if err != nil {
		return anthropicElem{}, 0, err
	}
	raw := body[j:end:end]
	var m struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return anthropicElem{}, 0, errMiss
	}
	msgs, err := anthropicMessage(k, m.Role, m.Content)
	if err != nil {
		return anthropicElem{}, 0, errMiss
	}
	js, err := compactMessages(msgs)
	if err != nil {
		return anthropicElem{}, 0, errMiss
	}
	return anthropicElem{raw: raw, msgs: msgs, js: js}, end, nil
}

// compactMessages writes msgs as json.Marshal writes them in a list,
// joined by commas, without the brackets.
func compactMessages(msgs []Message) ([]byte, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	return b[1 : len(b)-1], nil
}
