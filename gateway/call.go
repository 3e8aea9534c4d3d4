package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/wire"
)

// Traffic kinds of a call.
const (
	TrafficTraining   = "training"   // an engine's answer with token ids
	TrafficEvaluation = "evaluation" // a provider's answer without them
)

// call is one recorded model call.
type call struct {
	index, turn   int
	dialect       Dialect
	traffic       string
	offersTools   bool
	promptIDs     []int
	completionIDs []int
	logprobs      []float64
	finishReason  string
	usage         wire.TokenUsage
	latencyMS     float64
	status        int    // what the agent got when not 200
	err           string // why the call failed
	issues        []Issue

	// sampling is what the agent asked (its dialect's names) and sm what
	// was sent and why.
	sampling json.RawMessage
	sm       sampled
	// versionSent and versionAnswered are the policy versions when the call
	// went upstream and when its answer came back; straddles says the
	// version changed in between.
	versionSent, versionAnswered int64
	straddles                    bool

	// parent is the earlier call this one extends (nil: none) and children
	// the calls extending it, in index order; set for trainable calls when
	// recorded (prefixIndex), under the gateway's mutex.
	parent   *call
	children []*call
	// emitted says the call's llm_response is out (guarded by the
	// gateway's emitMu).
	emitted bool
	// key is the hash the prefix index files the call under: of its
	// prompt+completion's first seqLen/blockSize blocks.
	key uint64

	// inherited marks a call of the History the gateway was opened with.
	inherited bool
	// refused says a budget refused the call (it was not counted); spent
	// is the completion tokens it counted against the output budgets.
	refused bool
	spent   int
	// print is what a replay matches the request on; answer what the agent
	// received (set under the gateway's mutex once written), or
	// answerDropped when it was not kept, under the cap answerCap.
	print         *requestPrint
	answer        *answer
	answerDropped bool
	answerCap     int64
}

// trainable reports whether the call can enter a chain.
func (c *call) trainable() bool {
	return c.err == "" && c.traffic == TrafficTraining && !fatal(c.issues)
}

// generate serves one generation request of dialect d on route rt.
func (g *Gateway) generate(w http.ResponseWriter, r *http.Request, d dialect.Translator, rt dialect.Route, body []byte) {
	if m, ok := d.(dialect.Memoizer); ok {
		m.UseMemo(&g.memo)
	}
	req, err := d.Decode(r, body)
	if err != nil {
		d.WriteError(w, failure{Status: http.StatusBadRequest, Kind: failInvalid, Message: "gateway: malformed request: " + err.Error()})
		return
	}
	rp := g.printOf(d.Name(), rt, req)
	if g.replay != nil && g.replayCall(w, d, req, rp) {
		return
	}
	// The agent's answer is kept as it is written (history.go).
	tee := g.tee(w)
	if tee != nil {
		w = tee
	}
	var rec *call
	defer func() {
		if rec != nil {
			g.keepAnswer(rec, tee)
		}
	}()
	if g.opts.Upstream.Kind == UpstreamPassthrough {
		rec = g.passthrough(w, r, d, rt, req, body, rp)
		return
	}
	adm := g.admit()
	var upBody upstreamBody
	var sm sampled
	var bodyErr error
	if adm.refused == nil {
		var fields map[string]json.RawMessage
		if fields, bodyErr = req.Chat.Fields(); bodyErr == nil {
			upBody, sm, bodyErr = g.engineBodyOf(fields, req.Chat.CompactMessages(), adm.maxTokens, adm.pin)
		}
	}
	countSampling(sm)
	version, epoch := g.opts.Policy.Current()
	g.emitRequest(adm.turn, &wire.LLMRequest{
		Model: req.Model, Messages: req.Messages, CallIndex: adm.index, Dialect: string(d.Name()),
		Stream: req.Stream, Tools: req.Tools, Sampling: req.Sampling, EffectiveSampling: sm.effective,
		Extra: requestExtra(version, sm),
	})
	rec = &call{index: adm.index, turn: adm.turn, dialect: d.Name(), traffic: TrafficTraining, offersTools: req.OffersTools(),
		sampling: req.Sampling, sm: sm, versionSent: version, versionAnswered: version, print: rp, refused: adm.refused != nil}
	fail := func(f failure) {
		rec.status, rec.err = f.Status, f.Message
		g.record(rec)
		g.emit(adm.turn, &wire.LLMResponse{CallIndex: adm.index, Dialect: string(d.Name()), Status: f.Status, Error: f.Message})
		d.WriteError(w, f)
	}
	if adm.refused != nil {
		g.log.Info("gateway: call refused", "call", adm.index, "turn", adm.turn, "budget", adm.refused.Budget)
		fail(failure{Status: http.StatusTooManyRequests, Kind: failBudget, Message: "gateway: " + adm.refused.Error()})
		if g.opts.OnBudget != nil {
			g.opts.OnBudget(adm.refused)
		}
		return
	}
	if bodyErr != nil {
		fail(failure{Status: http.StatusBadRequest, Kind: failInvalid, Message: "gateway: cannot translate request: " + bodyErr.Error()})
		return
	}
	start := time.Now()
	c, f := g.callEngine(r.Context(), upBody)
	rec.latencyMS = float64(time.Since(start).Microseconds()) / 1000
	rec.versionAnswered = g.opts.Policy.Version()
	rec.straddles = g.opts.Policy.ChangedSince(version, epoch)
	if rec.straddles {
		straddlingCalls.Add(1)
	}
	if f != nil {
		g.log.Warn("gateway: upstream call failed", "call", adm.index, "turn", adm.turn, "status", f.Status, "err", f.Message)
		fail(*f)
		return
	}
	rec.promptIDs, rec.completionIDs, rec.logprobs = c.PromptIDs, c.CompletionIDs, c.Logprobs
	rec.finishReason, rec.usage = c.FinishReason, c.Usage
	rec.issues = validateCall(c)
	for i := range rec.issues {
		rec.issues[i].CallIndex = adm.index
	}
	rec.spent = c.Usage.CompletionTokens
	if len(c.CompletionIDs) > 0 {
		rec.spent = len(c.CompletionIDs)
	}
	g.record(rec)
	g.spend(adm.turn, rec.spent)
	latency, used := rec.latencyMS, c.Usage
	g.emitResponse(rec, &wire.LLMResponse{
		Content: responseContent(c), Model: c.Model, FinishReason: c.FinishReason, Usage: &used,
		CallIndex: adm.index, Dialect: string(d.Name()), Traffic: TrafficTraining,
		PromptTokenIDs: c.PromptIDs, CompletionTokenIDs: c.CompletionIDs, Logprobs: c.Logprobs,
		LatencyMS: &latency, Extra: responseExtra(rec),
	})
	if err := d.Encode(w, &c.Completion); err != nil {
		g.log.Debug("gateway: agent went away mid-answer", "call", adm.index, "err", err)
	}
}

// emitResponse emits recorded call c's llm_response ev. A call with a
// parent names it (parent_call_index); unless the client asked for full
// ids, and once the parent's own llm_response is out (so that a consumer
// reading the events in order has it), ev carries only the prompt ids
// after the parent's prompt+completion (prompt_token_ids_from): what an
// observation frame carries per call stays the size of what is new, not
// of the whole conversation.
func (g *Gateway) emitResponse(c *call, ev *wire.LLMResponse) {
	g.mu.Lock()
	parent, full := c.parent, g.fullIDs
	g.mu.Unlock()
	g.emitMu.Lock()
	defer g.emitMu.Unlock()
	if parent != nil {
		ev.ParentCallIndex = parent.index
		if n := parent.seqLen(); !full && parent.emitted && n <= len(ev.PromptTokenIDs) {
			ev.PromptTokenIDs, ev.PromptTokenIDsFrom = ev.PromptTokenIDs[n:], n
		}
	}
	g.emit(c.turn, ev)
	c.emitted = true
}

// responseExtra carries a call's policy versions and ingest issues on its
// llm_response.
func responseExtra(c *call) wire.Extra {
	x := wire.Extra{"policy_version": c.versionAnswered, "policy_version_sent": c.versionSent}
	if c.straddles {
		x["straddles_update"] = true
	}
	if len(c.issues) > 0 {
		b, _ := json.Marshal(c.issues)
		x["issues"] = json.RawMessage(b)
	}
	return x
}

// requestExtra carries the policy version a call is sent under and what
// the sampling pin did to it on its llm_request.
func requestExtra(version int64, sm sampled) wire.Extra {
	x := wire.Extra{"policy_version": version}
	if sm.pinned {
		x["sampling_pinned"] = true
	}
	if len(sm.stripped) > 0 {
		x["sampling_stripped"] = sm.stripped
	}
	if len(sm.overridden) > 0 {
		x["sampling_overridden"] = sm.overridden
	}
	if len(sm.differs) > 0 {
		x["sampling_differs"] = sm.differs
	}
	return x
}

// responseContent is the answer as llm_response records it: its text, or
// a list of blocks when it has reasoning or tool calls.
func responseContent(c *completion) any {
	if c.Reasoning == "" && len(c.ToolCalls) == 0 {
		return c.Text
	}
	var blocks []any
	if c.Reasoning != "" {
		blocks = append(blocks, map[string]any{"type": "reasoning", "text": c.Reasoning})
	}
	if c.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": c.Text})
	}
	for _, tc := range c.ToolCalls {
		blocks = append(blocks, map[string]any{"type": "tool_call", "id": tc.ID, "name": tc.Name, "arguments": tc.Arguments})
	}
	return blocks
}

// record keeps a call for the export and its turn's issues; a trainable
// call gets its parent now, once.
func (g *Gateway) record(c *call) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, c)
	if g.byTurn == nil {
		g.byTurn = map[int][]*call{}
	}
	g.byTurn[c.turn] = append(g.byTurn[c.turn], c)
	if c.trainable() {
		g.chains.add(c)
	}
}
