package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/wire"
)

// Divergence is a replayed call unlike the recorded one (wire.Divergence,
// Door wire.DoorModel).
type Divergence = wire.Divergence

// A replay (Options.Replay) answers an opened gateway's next calls from its
// History's recorded answers, in order (the calls of one turn in any
// order: replayCall), matching each request to the
// recorded one on what the model sees: the typed chat request of the
// middle format (its messages, system prompt included, their text, parts,
// reasoning and tool calls; the tools offered, canonical JSON; tool_choice
// and parallel_tool_calls; the sampling fields; the model asked for), and
// the dialect, the route (Gemini's model and method are in its path, its
// stream format in its query) and whether it streams, which the recorded
// bytes depend on.
// Headers, ids (request, tool call and tool result ids) and JSON key order
// are not compared. Every call keeps a print of its request for this: a
// hash per message and one per other part, so that a long conversation
// keeps a few bytes per message, not its text.

// printSeed keys the prints' hashes; histories live in one process.
var printSeed = maphash.MakeSeed()

// requestPrint is what a replay compares of a call's request.
type requestPrint struct {
	dialect  Dialect
	route    string // the route's path and the query its dialect reads (Gemini's model, method and alt=sse)
	stream   bool
	model    string
	tools    uint64 // canonical JSON of the typed tools
	nTools   int
	choice   uint64 // tool_choice and parallel_tool_calls, canonical
	sampling string // the sampling fields, canonical JSON (small)
	msgs     []uint64
}

// printOf returns the print of a decoded request of dialect d. tools
// caches the canonical hash of tool lists by the hash of their bytes
// (tools rarely change between calls, and canonicalising a large list on
// every call would cost).
func (g *Gateway) printOf(d Dialect, rt dialect.Route, req *dialect.Request) *requestPrint {
	p := &requestPrint{dialect: d, route: rt.Path, stream: req.Stream, model: req.Chat.Model, nTools: len(req.Chat.Tools)}
	if q := rt.Query.Encode(); q != "" {
		p.route += "?" + q
	}
	var h maphash.Hash
	h.SetSeed(printSeed)
	if len(req.Chat.Tools) > 0 {
		b, _ := json.Marshal(req.Chat.Tools)
		raw := maphash.Bytes(printSeed, b)
		g.mu.Lock()
		canon, ok := g.toolsCanon[raw]
		g.mu.Unlock()
		if !ok {
			canon = maphash.Bytes(printSeed, canonicalJSON(b))
			g.mu.Lock()
			if g.toolsCanon == nil || len(g.toolsCanon) >= 64 {
				g.toolsCanon = map[uint64]uint64{}
			}
			g.toolsCanon[raw] = canon
			g.mu.Unlock()
		}
		p.tools = canon
	}
	h.Write(canonicalJSON(req.Chat.ToolChoice))
	h.WriteByte(0)
	h.Write(canonicalJSON(req.Chat.ParallelToolCalls))
	p.choice = h.Sum64()
	if s := dialect.PickSampling(req.Chat.Params); s != nil {
		p.sampling = string(canonicalJSON(s))
	}
	p.msgs = g.lastPrint.hashAll(&h, req.Chat.Messages)
	return p
}

// printedMessages is the messages printed last and their hashes: the next
// request of a conversation repeats them, and a message the same as the
// one at its index before (most often the very strings, compared without
// reading them) is not hashed again. When the messages are the very
// array printed last, continued (dialect.Memo appends a conversation's
// messages in place), nothing before the new ones is read: their hashes
// are appended in place to the hashes before, which the calls of the
// conversation share.
type printedMessages struct {
	mu     sync.Mutex
	msgs   []dialect.Message
	hashes []uint64
}

// hashAll returns the hash of each message (messageHash), and remembers
// them. What it returns has no room to append to.
func (pm *printedMessages) hashAll(h *maphash.Hash, msgs []dialect.Message) []uint64 {
	pm.mu.Lock()
	prev, prevHashes := pm.msgs, pm.hashes
	pm.msgs, pm.hashes = nil, nil // taken: until kept again, nobody else appends to them
	pm.mu.Unlock()
	out := make([]uint64, 0, len(msgs))
	if n := len(prev); n > 0 && n <= len(msgs) && &prev[0] == &msgs[0] {
		out = prevHashes // the same memory: the same messages (a decoded message is never written)
	}
	for i := len(out); i < len(msgs); i++ {
		if i < len(prev) && sameMessage(&msgs[i], &prev[i]) {
			out = append(out, prevHashes[i])
		} else {
			out = append(out, messageHash(h, &msgs[i]))
		}
	}
	pm.mu.Lock()
	pm.msgs, pm.hashes = msgs, out
	pm.mu.Unlock()
	return out[:len(out):len(out)]
}

// sameMessage reports whether a and b are the same message.
func sameMessage(a, b *dialect.Message) bool {
	return a.Role == b.Role && a.Reasoning == b.Reasoning && a.ToolCallID == b.ToolCallID &&
		(a.Content == b.Content || (a.Content != nil && b.Content != nil && *a.Content == *b.Content)) &&
		(a.Parts == nil) == (b.Parts == nil) && slices.Equal(a.Parts, b.Parts) && slices.Equal(a.ToolCalls, b.ToolCalls)
}

// messageHash hashes what the model sees of m: not its ids.
func messageHash(h *maphash.Hash, m *dialect.Message) uint64 {
	h.Reset()
	str := func(s string) {
		h.WriteString(strconv.Itoa(len(s)))
		h.WriteByte(':')
		h.WriteString(s)
	}
	str(m.Role)
	switch {
	case m.Parts != nil:
		h.WriteByte('p')
		for _, pt := range m.Parts {
			str(pt.Type)
			str(pt.Text)
			str(pt.ImageURL)
		}
	case m.Content != nil:
		h.WriteByte('c')
		str(*m.Content)
	default:
		h.WriteByte('n')
	}
	str(m.Reasoning)
	for _, tc := range m.ToolCalls {
		str(tc.Name)
		str(tc.Arguments)
	}
	return h.Sum64()
}

// maxCanonical bounds the JSON canonicalJSON decodes to sort its keys: an
// agent's offered tools are a few hundred kilobytes at most, and decoded
// into Go values JSON costs up to forty times its size (an array of
// numbers is one JSON container, which the door does not charge for).
const maxCanonical = 1 << 20

// canonicalJSON returns raw with object keys sorted and insignificant
// space removed (raw itself when it is not JSON; nil for nothing or null).
func canonicalJSON(raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if len(raw) > maxCanonical {
		// Decoded into Go values it would cost tens of times its size:
		// compacted, its keys in the order sent.
		var out bytes.Buffer
		if json.Compact(&out, raw) != nil {
			return raw
		}
		return out.Bytes()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// diff returns what differs between recorded print want and got (the new
// request, req): the field and the two sides, or ok.
func diff(want, got *requestPrint, req *dialect.Request) (field, w, g string, ok bool) {
	switch {
	case want.dialect != got.dialect:
		return "dialect", string(want.dialect), string(got.dialect), false
	case want.route != got.route:
		return "route", excerpt(want.route), excerpt(got.route), false
	case want.stream != got.stream:
		return "stream", strconv.FormatBool(want.stream), strconv.FormatBool(got.stream), false
	case want.model != got.model:
		return "model", strconv.Quote(want.model), strconv.Quote(got.model), false
	case want.tools != got.tools:
		return "tools", fmt.Sprintf("%d tools (digest %016x)", want.nTools, want.tools), fmt.Sprintf("%d tools (digest %016x)", got.nTools, got.tools), false
	case want.choice != got.choice:
		return "tool_choice", "another tool_choice or parallel_tool_calls", excerpt(string(req.Chat.ToolChoice)), false
	case want.sampling != got.sampling:
		return "sampling", excerpt(orNone(want.sampling)), excerpt(orNone(got.sampling)), false
	}
	n := min(len(want.msgs), len(got.msgs))
	for i := range n {
		if want.msgs[i] != got.msgs[i] {
			return fmt.Sprintf("messages[%d]", i), fmt.Sprintf("another message (digest %016x)", want.msgs[i]), messageExcerpt(&req.Chat.Messages[i]), false
		}
	}
	if len(want.msgs) != len(got.msgs) {
		g := fmt.Sprintf("%d messages", len(got.msgs))
		if len(got.msgs) > n {
			g += ", the first new one " + messageExcerpt(&req.Chat.Messages[n])
		}
		return "messages", fmt.Sprintf("%d messages", len(want.msgs)), g, false
	}
	return "", "", "", true
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// excerptLen bounds the text a divergence quotes.
const excerptLen = 120

func excerpt(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > excerptLen {
		cut := excerptLen
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// messageExcerpt quotes the start of a message, for a divergence.
func messageExcerpt(m *dialect.Message) string {
	text := ""
	switch {
	case m.Content != nil:
		text = *m.Content
	case len(m.Parts) > 0:
		text = m.Parts[0].Text
	case len(m.ToolCalls) > 0:
		text = m.ToolCalls[0].Name + " " + m.ToolCalls[0].Arguments
	}
	return m.Role + ": " + strconv.Quote(excerpt(text))
}

// replayCall answers a request from the record while a replay has answers
// left, and reports whether it did (false: the call goes live). The
// request must match the first recorded call not yet answered (diff), or,
// since concurrent calls (an agent's side call beside its main one) reach
// the gateway in any order, another unanswered recorded call of the same
// turn; the first that matches is answered. A call matching none is a
// divergence, reported against the first unanswered call: it gets an error
// answer in its dialect, OnDivergence is called, and from then on every
// call gets that error (the fork has failed: no engine tokens are spent on
// it). A replayed call is the inherited one: it is not recorded again,
// counted against a budget, or emitted as events.
func (g *Gateway) replayCall(w http.ResponseWriter, d dialect.Translator, req *dialect.Request, p *requestPrint) bool {
	g.mu.Lock()
	if g.diverged != nil {
		div := *g.diverged
		g.mu.Unlock()
		d.WriteError(w, divergenceFailure(&div))
		return true
	}
	if g.replayPos >= len(g.replay) {
		g.mu.Unlock()
		return false
	}
	next := g.replay[g.replayPos]
	at := -1
	for i := g.replayPos; i < len(g.replay) && g.replay[i].turn == next.turn; i++ {
		if g.replayed[i] {
			continue
		}
		if _, _, _, ok := diff(g.replay[i].print, p, req); ok {
			at = i
			break
		}
	}
	if at < 0 {
		field, want, got, _ := diff(next.print, p, req)
		div := &Divergence{Door: wire.DoorModel, Index: next.index, Turn: next.turn, Field: field, Want: want, Got: got}
		g.diverged, g.replayPos = div, len(g.replay)
		g.mu.Unlock()
		g.log.Warn("gateway: replay diverged", "call", next.index, "turn", next.turn, "field", field)
		if g.opts.OnDivergence != nil {
			g.opts.OnDivergence(*div)
		}
		d.WriteError(w, divergenceFailure(div))
		return true
	}
	rec := g.replay[at]
	g.replayed[at] = true
	for g.replayPos < len(g.replay) && g.replayed[g.replayPos] {
		g.replayPos++
	}
	g.mu.Unlock()
	a := rec.answer
	h := w.Header()
	for k, vs := range a.header {
		h[k] = append([]string(nil), vs...)
	}
	w.WriteHeader(a.status)
	if _, err := w.Write(a.body); err != nil {
		g.log.Debug("gateway: agent went away mid-replay", "call", rec.index, "err", err)
		return true
	}
	http.NewResponseController(w).Flush()
	return true
}

// divergenceFailure is the error answer of a diverged replay's calls.
func divergenceFailure(div *Divergence) failure {
	return failure{Status: http.StatusBadRequest, Kind: failInvalid,
		Message: "gateway: this fork's replay diverged from its parent's record (" + div.Error() + "); no more calls are answered"}
}

// Replaying reports whether recorded answers remain to be replayed (false
// too once the replay diverged).
func (g *Gateway) Replaying() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.diverged == nil && g.replayPos < len(g.replay)
}

// Diverged returns the replay's divergence, or nil.
func (g *Gateway) Diverged() *Divergence {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.diverged == nil {
		return nil
	}
	d := *g.diverged
	return &d
}

// EndReplay ends a replay when the fork's replayed turns are over: recorded
// calls still unanswered mean the fork made fewer calls than its parent,
// which is a divergence too (field "calls"; OnDivergence is called and it
// is returned). Without one it returns nil, and later calls go live. It
// returns the replay's divergence if it had diverged already; nil for a
// gateway without a replay.
func (g *Gateway) EndReplay() *Divergence {
	g.mu.Lock()
	if g.diverged != nil {
		d := *g.diverged
		g.mu.Unlock()
		return &d
	}
	left := 0
	for i := g.replayPos; i < len(g.replay); i++ {
		if !g.replayed[i] {
			left++
		}
	}
	if left == 0 {
		g.replayPos = len(g.replay)
		g.mu.Unlock()
		return nil
	}
	next := g.replay[g.replayPos]
	div := &Divergence{Door: wire.DoorModel, Index: next.index, Turn: next.turn, Field: "calls",
		Want: fmt.Sprintf("%d more calls", left), Got: "none: the replayed turns ended"}
	g.diverged, g.replayPos = div, len(g.replay)
	g.mu.Unlock()
	g.log.Warn("gateway: replay ended with recorded calls left", "call", next.index, "left", left)
	if g.opts.OnDivergence != nil {
		g.opts.OnDivergence(*div)
	}
	d := *div
	return &d
}
