package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/harnessd/harnessd/wire"
)

// Calls' events as deltas. A growing conversation sends, with every call,
// everything it sent before: the whole chat, and the prompt's token ids.
// The gateway's events carry only what is new, so that an observation
// frame, the record and the console feed cost the same at call 300 as at
// call 1: an llm_request's messages after those of the request emitted
// before it (messages_call_index, messages_from) when those are a prefix of
// its own, and an llm_response's prompt ids after its parent call's
// prompt+completion (parent_call_index, prompt_token_ids_from;
// emitResponse). The base of a delta is always emitted before it (emitMu).
// SetFullTokenIDs turns both off; the export always has full chains.

// lastRequest is the llm_request emitted last: its call, its whole
// messages as the agent sent them and how many they are (n < 0: not a JSON
// list, no base for the next one).
type lastRequest struct {
	index int
	raw   json.RawMessage
	n     int
}

// emitRequest emits ev, an llm_request whose Messages are the agent's
// whole conversation, as a delta from the request emitted before it when
// that one's messages are a prefix of ev's (the same bytes, then a comma).
func (g *Gateway) emitRequest(turn int, ev *wire.LLMRequest) {
	g.mu.Lock()
	full := g.fullIDs
	g.mu.Unlock()
	g.emitMu.Lock()
	defer g.emitMu.Unlock()
	raw := ev.Messages
	last := g.lastReq
	next := lastRequest{index: ev.CallIndex, raw: raw, n: -1}
	if rest, ok := listAfter(last.raw, raw); ok && last.n > 0 {
		var own []json.RawMessage
		if err := json.Unmarshal(rest, &own); err == nil {
			next.n = last.n + len(own)
			if !full {
				ev.Messages, ev.MessagesFrom, ev.MessagesCallIndex = rest, last.n, last.index
			}
		}
	}
	if next.n < 0 {
		var all []json.RawMessage
		if err := json.Unmarshal(raw, &all); err == nil {
			next.n = len(all)
		}
	}
	g.lastReq = next
	g.emit(turn, ev)
}

// listAfter returns, when JSON list a is a prefix of JSON list b (b is a's
// bytes without its closing bracket, then a comma and more elements), the
// list of b's elements after a's.
func listAfter(a, b json.RawMessage) (json.RawMessage, bool) {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(a) < 2 || a[0] != '[' || a[len(a)-1] != ']' || len(b) <= len(a) || b[len(b)-1] != ']' {
		return nil, false
	}
	head := bytes.TrimRight(a[:len(a)-1], " \t\r\n")
	if !bytes.HasPrefix(b, head) {
		return nil, false
	}
	tail := bytes.TrimLeft(b[len(head):], " \t\r\n")
	if len(tail) == 0 || tail[0] != ',' {
		return nil, false
	}
	out := make(json.RawMessage, 0, len(tail))
	out = append(append(out, '['), tail[1:]...)
	return out, true
}
