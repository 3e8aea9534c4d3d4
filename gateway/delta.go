package gateway

import "github.com/harnessd/harnessd/wire"

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

// emitRequest emits ev, an llm_request whose Messages are the agent's
// whole conversation, as a delta from the request emitted before it when
// that one's messages are a prefix of ev's (wire.RequestDeltas).
func (g *Gateway) emitRequest(turn int, ev *wire.LLMRequest) {
	g.mu.Lock()
	full := g.fullIDs
	g.mu.Unlock()
	g.emitMu.Lock()
	defer g.emitMu.Unlock()
	g.lastReq.Next(ev, full)
	g.emit(turn, ev)
}
