package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/harnessd/harnessd/gateway/dialect"
)

var (
	jsonTrue  = json.RawMessage("true")
	jsonFalse = json.RawMessage("false")
)

// engineBody applies the gateway's request hygiene to an engine request
// and returns its body and effective sampling parameters: non-streaming
// (stream_options dropped), empty tools dropped with tool_choice and
// parallel_tool_calls, one choice, the sampling pin applied (pin, nil for
// none: what it stripped and where the result differs from it are in the
// returned sampled), max_tokens (the pin's, else the agent's) capped at
// maxTokens (0: no cap), the upstream's model, and return_token_ids and
// logprobs injected.
func (g *Gateway) engineBody(chat map[string]json.RawMessage, maxTokens int, pin *Sampling) ([]byte, sampled, error) {
	body, sm, err := g.engineBodyOf(chat, nil, maxTokens, pin)
	return body.bytes(), sm, err
}

// engineBodyOf is engineBody for a request whose "messages" value is known
// compacted (open: the list without its closing bracket, nil: not known):
// the body carries those bytes as they are, without compacting or copying
// the whole conversation again.
func (g *Gateway) engineBodyOf(chat map[string]json.RawMessage, open []byte, maxTokens int, pin *Sampling) (upstreamBody, sampled, error) {
	var sm sampled
	up := make(map[string]json.RawMessage, len(chat)+4)
	for k, v := range chat {
		up[k] = v
	}
	delete(up, "stream_options")
	up["stream"] = jsonFalse
	if !nonEmptyList(up["tools"]) {
		delete(up, "tools")
		delete(up, "tool_choice")
		delete(up, "parallel_tool_calls")
	}
	delete(up, "n")
	asked := 0
	for _, k := range []string{"max_completion_tokens", "max_tokens"} {
		if v, ok := up[k]; ok {
			if n, err := strconv.Atoi(string(v)); err == nil && n > 0 && asked == 0 {
				asked = n
			}
			delete(up, k)
		}
	}
	agentAsked := asked > 0
	if pin != nil && pin.MaxTokens != nil {
		asked = *pin.MaxTokens
	}
	if maxTokens > 0 && (asked == 0 || asked > maxTokens) {
		asked = maxTokens
	}
	if asked > 0 {
		up["max_tokens"] = json.RawMessage(strconv.Itoa(asked))
	}
	if m := g.opts.Upstream.Model; m != "" {
		b, _ := json.Marshal(m)
		up["model"] = b
	}
	if pin != nil {
		sm.stripped, sm.overridden = pin.pin(up)
		if agentAsked && pin.MaxTokens != nil {
			sm.overridden = append(sm.overridden, "max_tokens")
			sort.Strings(sm.overridden)
		}
		sm.differs, sm.pinned = pin.differs(up), true
	}
	up["return_token_ids"] = jsonTrue
	up["logprobs"] = jsonTrue
	body, err := marshalFields(up, open)
	if err != nil {
		return upstreamBody{}, sm, err
	}
	sm.effective = dialect.PickSampling(up)
	return body, sm, nil
}

// sampled is what the gateway did to one call's sampling.
type sampled struct {
	effective  json.RawMessage // the sampling fields sent upstream
	stripped   []string        // the agent's fields the pin stripped
	overridden []string        // the agent's fields the pin replaced
	differs    []string        // the fields sent otherwise than pinned
	pinned     bool            // a pin applied
}

// nonEmptyList reports whether raw is a JSON list with at least one item.
func nonEmptyList(raw json.RawMessage) bool {
	var items []json.RawMessage
	return json.Unmarshal(raw, &items) == nil && len(items) > 0
}

// marshalFields writes an object's fields as json.Marshal writes the map
// (keys sorted, values compacted and HTML-escaped), the "messages" value
// as open and "]" when open is not nil: the same bytes, without compacting
// or copying the conversation again.
func marshalFields(up map[string]json.RawMessage, open []byte) (upstreamBody, error) {
	keys := slices.Sorted(maps.Keys(up))
	size := 2
	for _, k := range keys {
		if size += len(k) + 4; k != "messages" || open == nil {
			size += len(up[k])
		}
	}
	var body upstreamBody
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return upstreamBody{}, fmt.Errorf("field %q: %w", k, err)
		}
		out = append(append(out, kb...), ':')
		v := up[k]
		switch {
		case k == "messages" && open != nil:
			body.head, body.messages = out, open
			out = append(make([]byte, 0, size-len(out)), ']')
		case v == nil:
			out = append(out, "null"...)
		default:
			vb, err := json.Marshal(v)
			if err != nil {
				return upstreamBody{}, fmt.Errorf("field %q: %w", k, err)
			}
			out = append(out, vb...)
		}
	}
	out = append(out, '}')
	if body.messages == nil {
		body.head = out
	} else {
		body.tail = out
	}
	return body, nil
}

// upstreamBody is an engine request's body: head, messages and tail, one
// after another. messages, when not nil, is a conversation's compacted
// messages list without its closing bracket, shared with the other calls
// of the conversation (dialect.Memo): it is written from where it is,
// never copied into a body of its own.
type upstreamBody struct{ head, messages, tail []byte }

// size is the body's length in bytes.
func (b upstreamBody) size() int { return len(b.head) + len(b.messages) + len(b.tail) }

// bytes returns the body as one slice (a copy when it is in pieces).
func (b upstreamBody) bytes() []byte {
	if b.messages == nil && b.tail == nil {
		return b.head
	}
	return slices.Concat(b.head, b.messages, b.tail)
}

// reader returns a reader of the body.
func (b upstreamBody) reader() io.Reader {
	if b.messages == nil && b.tail == nil {
		return bytes.NewReader(b.head)
	}
	return io.MultiReader(bytes.NewReader(b.head), bytes.NewReader(b.messages), bytes.NewReader(b.tail))
}
