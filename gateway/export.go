package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// ExportFormat names the export's JSON shape (docs/gateway.md).
const ExportFormat = "harnessd.gateway.export/v1"

// Export is the training record of an episode so far: every call, the
// chains built from them, the rewards the caller recorded and the problems
// found. Its JSON form is documented in docs/gateway.md.
type Export struct {
	// Format is ExportFormat.
	Format string `json:"format"`
	// EpisodeID is Options.EpisodeID.
	EpisodeID string `json:"episode_id"`
	// Traffic is TrafficTraining (an engine upstream).
	Traffic string `json:"traffic"`
	// PinnedSampling is the sampling pin of the episode's calls as the
	// engine is sent it (Sampling.Pinned), with its allow list and
	// strip_stop; absent without a pin.
	PinnedSampling *Sampling `json:"pinned_sampling,omitempty"`
	// PolicyVersion is the policy version when the export was made.
	PolicyVersion int64 `json:"policy_version"`
	// Calls lists every call in index order, failed and refused ones too.
	Calls []ExportCall `json:"calls"`
	// Chains are the trainable sequences (see Chain).
	Chains []Chain `json:"chains"`
	// Rewards are the rewards recorded with SetReward, by turn; never
	// synthesised.
	Rewards []Reward `json:"rewards"`
	// Issues are the problems found on ingest and export, graded.
	Issues []Issue `json:"issues"`
	// Events are the events of the environment's queue that fired, in
	// order (absent without any): each names the first call after it,
	// whose prompt span lists it (Span.Events).
	Events []EnvEvent `json:"events,omitempty"`
}

// ExportCall summarises one call.
type ExportCall struct {
	// CallIndex is the call's 1-based index in the episode.
	CallIndex int `json:"call_index"`
	// Turn is the turn it was made in.
	Turn int `json:"turn"`
	// Dialect is the agent's wire API.
	Dialect Dialect `json:"dialect"`
	// Traffic is training or evaluation.
	Traffic string `json:"traffic"`
	// Chain is the chain holding the call's tokens (0: none).
	Chain int `json:"chain,omitempty"`
	// Parent is the call it extends (0: a chain's root or not chained).
	Parent int `json:"parent,omitempty"`
	// Inherited marks a call of the parent episode this one was forked
	// from (Options.History): it was made there, and is in this export as
	// the prefix the fork's own calls continue.
	Inherited bool `json:"inherited,omitempty"`
	// Auxiliary marks a side call (a title, a probe): it offers no tools
	// while the episode's other calls do, and extends or is extended by
	// none; it is kept out of the chains.
	Auxiliary bool `json:"auxiliary,omitempty"`
	// PromptTokens and CompletionTokens count the engine's ids.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// FinishReason says why generation stopped.
	FinishReason string `json:"finish_reason,omitempty"`
	// LatencyMS is the upstream call's duration.
	LatencyMS float64 `json:"latency_ms"`
	// Status and Error describe a failed or refused call.
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	// PolicyVersionSent is the policy version when the call went upstream,
	// PolicyVersion when its answer came back; StraddlesUpdate says the
	// version changed while it was in flight (the completion may mix
	// weights, or was sampled by other weights than the version says).
	PolicyVersionSent int64 `json:"policy_version_sent"`
	PolicyVersion     int64 `json:"policy_version"`
	StraddlesUpdate   bool  `json:"straddles_update,omitempty"`
	// Sampling is the sampling the agent asked for, in its dialect's
	// names; EffectiveSampling what the engine was sent (Chat Completions
	// names).
	Sampling          json.RawMessage `json:"sampling,omitempty"`
	EffectiveSampling json.RawMessage `json:"effective_sampling,omitempty"`
	// SamplingPinned says the call was sent under a sampling pin;
	// SamplingStripped lists the agent's fields the pin stripped,
	// SamplingOverridden those it replaced with the pinned values, and
	// SamplingDiffers the fields whose value sent is not the pin's (a
	// max_tokens lowered by a budget, an allowed field, a kept stop
	// sequence). A pinned call without SamplingDiffers was sampled exactly
	// as pinned.
	SamplingPinned     bool     `json:"sampling_pinned,omitempty"`
	SamplingStripped   []string `json:"sampling_stripped,omitempty"`
	SamplingOverridden []string `json:"sampling_overridden,omitempty"`
	SamplingDiffers    []string `json:"sampling_differs,omitempty"`
}

// Chain is one trainable token sequence: the last call's prompt and
// completion, in which every call's completion is a sampled span.
type Chain struct {
	// ID numbers the chain from 1.
	ID int `json:"id"`
	// BranchOf is the chain this one branched from (0: a root).
	BranchOf int `json:"branch_of,omitempty"`
	// Calls are the call indexes whose completions the chain trains on.
	Calls []int `json:"calls"`
	// PromptLength is the number of tokens before the first sampled one.
	PromptLength int `json:"prompt_length"`
	// InputIDs are the engine's token ids.
	InputIDs []int `json:"input_ids"`
	// LossMask is 1 on sampled tokens, 0 on prompt, tool and user tokens
	// and on context a branch inherits.
	LossMask []int `json:"loss_mask"`
	// Logprobs are the behaviour logprobs aligned with InputIDs: a number
	// where LossMask is 1, null where it is 0.
	Logprobs []*float64 `json:"logprobs"`
	// Spans partition InputIDs, in order.
	Spans []Span `json:"spans"`
}

// Span kinds.
const (
	SpanContext    = "context"    // tokens a branch inherits from its parent (masked)
	SpanPrompt     = "prompt"     // tokens the call's prompt adds: system, user, tool results (masked)
	SpanCompletion = "completion" // the call's sampled tokens (trained on)
)

// Span is a run of a chain's tokens from one call.
type Span struct {
	// Start and End delimit the span: InputIDs[Start:End].
	Start int `json:"start"`
	End   int `json:"end"`
	// Kind is SpanContext, SpanPrompt or SpanCompletion.
	Kind string `json:"kind"`
	// CallIndex is the call the tokens come from; Turn is its turn.
	CallIndex int `json:"call_index"`
	Turn      int `json:"turn"`
	// Inherited marks the tokens of a call inherited from the parent
	// episode of a fork (ExportCall.Inherited): a trainer that trains the
	// parent's export too can mask them in the fork's.
	Inherited bool `json:"inherited,omitempty"`
	// Events lists, on a prompt span, the Seq of the environment's events
	// that fired between the previous call and this one: their text (a
	// mid-turn delivery, a message appended to the turn) or their effect
	// (a file, a tool server's state) entered the context here.
	Events []int `json:"events,omitempty"`
}

// Reward is the environment's reward for a turn.
type Reward struct {
	Turn   int     `json:"turn"`
	Reward float64 `json:"reward"`
}

// Export returns the training record of the episode so far. An episode
// behind a passthrough upstream has none: ErrEvaluationTraffic.
func (g *Gateway) Export() (*Export, error) {
	if g.opts.Upstream.Kind == UpstreamPassthrough {
		return nil, ErrEvaluationTraffic
	}
	g.mu.Lock()
	calls := byIndex(g.calls)
	cands := slices.Clone(g.chains.cands)
	par := parentPositions(cands)
	pin := g.sampling
	envEvents := slices.Clone(g.events)
	rewards := make([]Reward, 0, len(g.rewards))
	for turn, r := range g.rewards {
		rewards = append(rewards, Reward{Turn: turn, Reward: r})
	}
	g.mu.Unlock()
	sort.Slice(rewards, func(i, j int) bool { return rewards[i].Turn < rewards[j].Turn })

	ex := &Export{Format: ExportFormat, EpisodeID: g.opts.EpisodeID, Traffic: TrafficTraining,
		PinnedSampling: pin, PolicyVersion: g.opts.Policy.Version(),
		Calls: []ExportCall{}, Chains: []Chain{}, Rewards: rewards, Issues: []Issue{}}
	summary := map[int]*ExportCall{}
	for _, c := range calls {
		ex.Calls = append(ex.Calls, ExportCall{
			CallIndex: c.index, Turn: c.turn, Dialect: c.dialect, Traffic: c.traffic, Inherited: c.inherited,
			PromptTokens: len(c.promptIDs), CompletionTokens: len(c.completionIDs),
			FinishReason: c.finishReason, LatencyMS: c.latencyMS, Status: c.status, Error: c.err,
			PolicyVersionSent: c.versionSent, PolicyVersion: c.versionAnswered, StraddlesUpdate: c.straddles,
			Sampling: c.sampling, EffectiveSampling: c.sm.effective,
			SamplingPinned: c.sm.pinned, SamplingStripped: c.sm.stripped,
			SamplingOverridden: c.sm.overridden, SamplingDiffers: c.sm.differs,
		})
		ex.Issues = append(ex.Issues, c.issues...)
		if c.err != "" {
			ex.Issues = append(ex.Issues, Issue{Severity: SeverityWarn, Code: IssueCallFailed, CallIndex: c.index, Message: c.err})
		}
	}
	for i := range ex.Calls {
		summary[ex.Calls[i].CallIndex] = &ex.Calls[i]
	}
	ex.Chains = buildChains(cands, par, summary, &ex.Issues)
	if len(envEvents) > 0 {
		ex.Events = placeEvents(envEvents, calls, ex.Chains)
	}
	if n := len(cands); n == 1 && cands[0].offersTools {
		ex.Issues = append(ex.Issues, Issue{Severity: SeverityWarn, Code: IssueSingleCall, CallIndex: cands[0].index,
			Message: "an agentic episode with a single model call"})
	}
	if len(calls) > 0 && len(ex.Chains) == 0 {
		ex.Issues = append(ex.Issues, Issue{Severity: SeverityWarn, Code: IssueNoTrainingCalls,
			Message: fmt.Sprintf("none of the episode's %d calls is usable for training", len(calls))})
	}
	ex.Issues = append(ex.Issues, ex.Validate()...)
	return ex, nil
}

// TurnIssues returns the problems found in the calls of turn n, as the
// export lists them: each call's ingest issues and failure in index order,
// then its chain breaks. It reads what was graded when the calls were
// recorded and builds no export; episode-wide findings (a single call, no
// training calls, chains that do not line up) are the export's. An episode
// behind a passthrough upstream has none: ErrEvaluationTraffic.
func (g *Gateway) TurnIssues(n int) ([]Issue, error) {
	if g.opts.Upstream.Kind == UpstreamPassthrough {
		return nil, ErrEvaluationTraffic
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	calls := byIndex(g.byTurn[n])
	var out []Issue
	for _, c := range calls {
		out = append(out, c.issues...)
		if c.err != "" {
			out = append(out, Issue{Severity: SeverityWarn, Code: IssueCallFailed, CallIndex: c.index, Message: c.err})
		}
	}
	for _, c := range calls {
		if !c.trainable() {
			continue
		}
		if id := g.chains.chainBreak(c); id > 0 {
			out = append(out, chainBreak(c, id))
		}
	}
	return out, nil
}

// chainBreak is the issue of call c starting chain id without extending an
// earlier call.
func chainBreak(c *call, id int) Issue {
	return Issue{Severity: SeverityInfo, Code: IssueChainBreak, CallIndex: c.index, Chain: id,
		Message: "the call extends no earlier call: a new chain starts"}
}

// buildChains links trainable calls (index order), whose parents' positions
// are par, into chains, filling the calls' chain, parent and auxiliary
// fields and noting breaks.
func buildChains(cands []*call, par []int, summary map[int]*ExportCall, issues *[]Issue) []Chain {
	children := make([]int, len(cands))
	anyTools := false
	for i, c := range cands {
		if par[i] >= 0 {
			children[par[i]]++
		}
		anyTools = anyTools || c.offersTools
	}
	chains := []Chain{}
	chainOf := make([]int, len(cands)) // 1-based chain id, 0: none
	tail := map[int]int{}              // chain id -> candidate index of its last call
	for i, c := range cands {
		s := summary[c.index]
		if anyTools && !c.offersTools && par[i] < 0 && children[i] == 0 {
			s.Auxiliary = true
			continue
		}
		p := par[i]
		switch {
		case p >= 0 && tail[chainOf[p]] == p: // extends its chain
			ch := &chains[chainOf[p]-1]
			appendCall(ch, c, len(ch.InputIDs))
			chainOf[i], tail[chainOf[p]] = chainOf[p], i
			s.Parent = cands[p].index
		case p >= 0: // a branch: the parent already has a child
			parent := cands[p]
			ch := Chain{ID: len(chains) + 1, BranchOf: chainOf[p], Calls: []int{}}
			n := len(parent.promptIDs) + len(parent.completionIDs)
			ch.InputIDs = append(append(ch.InputIDs, parent.promptIDs...), parent.completionIDs...)
			ch.LossMask = make([]int, n)
			ch.Logprobs = make([]*float64, n)
			ch.Spans = []Span{{Start: 0, End: n, Kind: SpanContext, CallIndex: parent.index, Turn: parent.turn, Inherited: parent.inherited}}
			appendCall(&ch, c, n)
			chains = append(chains, ch)
			chainOf[i], tail[ch.ID] = ch.ID, i
			s.Parent = parent.index
		default: // a root
			ch := Chain{ID: len(chains) + 1, Calls: []int{}}
			appendCall(&ch, c, 0)
			chains = append(chains, ch)
			chainOf[i], tail[ch.ID] = ch.ID, i
			if ch.ID > 1 {
				*issues = append(*issues, chainBreak(c, ch.ID))
			}
		}
		s.Chain = chainOf[i]
	}
	return chains
}

// appendCall adds c's new prompt tokens (from position have) and its
// completion to ch.
func appendCall(ch *Chain, c *call, have int) {
	if len(ch.Calls) == 0 {
		ch.PromptLength = len(c.promptIDs)
	}
	ch.Calls = append(ch.Calls, c.index)
	if have < len(c.promptIDs) {
		ch.Spans = append(ch.Spans, Span{Start: have, End: len(c.promptIDs), Kind: SpanPrompt, CallIndex: c.index, Turn: c.turn, Inherited: c.inherited})
		for _, id := range c.promptIDs[have:] {
			ch.InputIDs = append(ch.InputIDs, id)
			ch.LossMask = append(ch.LossMask, 0)
			ch.Logprobs = append(ch.Logprobs, nil)
		}
	}
	start := len(ch.InputIDs)
	for j, id := range c.completionIDs {
		lp := c.logprobs[j]
		ch.InputIDs = append(ch.InputIDs, id)
		ch.LossMask = append(ch.LossMask, 1)
		ch.Logprobs = append(ch.Logprobs, &lp)
	}
	ch.Spans = append(ch.Spans, Span{Start: start, End: len(ch.InputIDs), Kind: SpanCompletion, CallIndex: c.index, Turn: c.turn, Inherited: c.inherited})
}

// Validate checks the export's chains line up: input_ids, loss_mask and
// logprobs of one length, masks of 0 or 1, a logprob exactly where the mask
// is 1, and spans partitioning the ids with sampled spans unmasked. A
// trainer ingesting an export from elsewhere can run it too.
func (ex *Export) Validate() []Issue {
	var out []Issue
	bad := func(ch *Chain, code, format string, args ...any) {
		out = append(out, Issue{Severity: SeverityFatal, Code: code, Chain: ch.ID, Message: fmt.Sprintf(format, args...)})
	}
	for i := range ex.Chains {
		ch := &ex.Chains[i]
		n := len(ch.InputIDs)
		if len(ch.LossMask) != n || len(ch.Logprobs) != n {
			bad(ch, IssueMisaligned, "%d input_ids, %d loss_mask, %d logprobs", n, len(ch.LossMask), len(ch.Logprobs))
			continue
		}
		for j := 0; j < n; j++ {
			switch {
			case ch.LossMask[j] != 0 && ch.LossMask[j] != 1:
				bad(ch, IssueMisaligned, "loss_mask[%d] is %d", j, ch.LossMask[j])
			case ch.LossMask[j] == 0 && ch.Logprobs[j] != nil:
				bad(ch, IssueMaskedLogprob, "masked position %d carries a logprob", j)
			case ch.LossMask[j] == 1 && ch.Logprobs[j] == nil:
				bad(ch, IssueUnmaskedNoLogp, "trainable position %d has no logprob", j)
			default:
				continue
			}
			break
		}
		pos := 0
		for _, s := range ch.Spans {
			if s.Start != pos || s.End < s.Start || s.End > n {
				bad(ch, IssueMisaligned, "span %+v does not continue at %d", s, pos)
				break
			}
			want := 0
			if s.Kind == SpanCompletion {
				want = 1
			}
			for j := s.Start; j < s.End; j++ {
				if ch.LossMask[j] != want {
					bad(ch, IssueMisaligned, "%s span of call %d has loss_mask %d at %d", s.Kind, s.CallIndex, ch.LossMask[j], j)
					break
				}
			}
			pos = s.End
		}
		if pos != n {
			bad(ch, IssueMisaligned, "spans cover %d of %d tokens", pos, n)
		}
	}
	return out
}
