package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// answerOf is one answer as the agent received it.
type answerOf struct {
	status      int
	contentType string
	body        []byte
}

// send posts body to path and returns the whole answer.
func (g *testGateway) send(t *testing.T, path string, headers map[string]string, body []byte) answerOf {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answerOf{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}

// convo is an agent's growing conversation in one dialect: request i
// (from 0) holds every earlier user message and the engine's answer to it
// ("MOCK-REPLY: " + the user's text, as the fake engine answers), then a
// new user message, so that each call extends the one before.
type convo struct {
	dialect Dialect
	stream  bool
}

func (c convo) path() string {
	switch c.dialect {
	case DialectAnthropic:
		return "/v1/messages"
	case DialectResponses:
		return "/v1/responses"
	case DialectGemini:
		if c.stream {
			return "/v1beta/models/m:streamGenerateContent?alt=sse"
		}
		return "/v1beta/models/m:generateContent"
	}
	return "/v1/chat/completions"
}

func (c convo) headers(g *testGateway) map[string]string {
	switch c.dialect {
	case DialectAnthropic:
		return g.anthropicHeaders()
	case DialectGemini:
		return g.geminiHeaders()
	}
	return g.bearer()
}

// userText is the user's message of step i.
func userText(i int) string { return fmt.Sprintf("step %d: look at the code", i) }

// request returns request i's body, its fields in the order given by
// reversed (the same request either way: key order is not what the model
// sees), with the user's text of step i replaced by last when not "".
// Fields the model does not see (user, metadata) differ with reversed.
func (c convo) request(i int, reversed bool, last string) []byte {
	const system = "You are a coder."
	var msgs []any
	if c.dialect == DialectChat {
		msgs = append(msgs, map[string]any{"role": "system", "content": system})
	}
	for j := 0; j <= i; j++ {
		text := userText(j)
		if j == i && last != "" {
			text = last
		}
		reply := "MOCK-REPLY: " + text
		if c.dialect == DialectGemini {
			msgs = append(msgs, map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}})
			if j < i {
				msgs = append(msgs, map[string]any{"role": "model", "parts": []any{map[string]any{"text": reply}}})
			}
			continue
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": text})
		if j < i {
			msgs = append(msgs, map[string]any{"role": "assistant", "content": reply})
		}
	}
	noise := fmt.Sprintf("session-%v", reversed)
	var fields [][2]any
	switch c.dialect {
	case DialectAnthropic:
		fields = [][2]any{{"model", "m"}, {"messages", msgs}, {"stream", c.stream}, {"temperature", 0.5},
			{"system", system}, {"tools", claudeTools}, {"max_tokens", 1024}, {"metadata", map[string]any{"user_id": noise}}}
	case DialectResponses:
		fields = [][2]any{{"model", "m"}, {"input", msgs}, {"stream", c.stream}, {"temperature", 0.5}, {"instructions", system},
			{"tools", []any{map[string]any{"type": "function", "name": "add", "description": "adds", "parameters": map[string]any{"type": "object"}}}},
			{"user", noise}}
	case DialectGemini:
		fields = [][2]any{{"contents", msgs}, {"tools", geminiCLITools}, {"generationConfig", map[string]any{"temperature": 0.5}},
			{"systemInstruction", map[string]any{"parts": []any{map[string]any{"text": system}}}}}
	default:
		fields = [][2]any{{"model", "m"}, {"messages", msgs}, {"stream", c.stream}, {"temperature", 0.5},
			{"tools", addTools}, {"user", noise}}
	}
	if reversed {
		slices.Reverse(fields)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for k, f := range fields {
		if k > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(f[0])
		val, _ := json.Marshal(f[1])
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// generations counts the engine's generation requests.
func generations(llm *fakellm.Server) int {
	n := 0
	for _, e := range llm.Requests() {
		if e.N > 0 {
			n++
		}
	}
	return n
}

// callEvents returns the call indexes of the llm_request and llm_response
// events a gateway emitted.
func callEvents(evs []wire.Event) (requests, responses []int) {
	for _, ev := range evs {
		switch p := ev.Data.(type) {
		case *wire.LLMRequest:
			requests = append(requests, p.CallIndex)
		case *wire.LLMResponse:
			responses = append(responses, p.CallIndex)
		}
	}
	return requests, responses
}

// TestHistoryForkExtendsParentChain: gateway A records three calls over
// two turns of a growing conversation; gateway B, opened with A's History,
// makes the next call, which extends A's last prompt+completion: it gets
// A's last call as parent and index 4, B emits events for it alone, and
// B's export is A's chain (inherited) continued by B's call. UpTo(1) holds
// turn 1's calls only, and inherited calls count against B's budget.
func TestHistoryForkExtendsParentChain(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	a := startGateway(t, llm.URL(), Options{EpisodeID: "ep-parent"})
	sys := map[string]any{"role": "system", "content": "You are a coder."}
	a.SetTurn(1)
	msgs := []any{sys, user(`call add {"a":2,"b":3}`)}
	a1 := chatCall(t, a, addTools, msgs)
	msgs = append(msgs, a1, map[string]any{"role": "tool", "tool_call_id": "x", "content": "5"})
	msgs = append(msgs, chatCall(t, a, addTools, msgs))
	a.SetTurn(2)
	msgs = append(msgs, user("and again"))
	msgs = append(msgs, chatCall(t, a, addTools, msgs))

	h := a.History()
	if h.Len() != 3 || h.LastTurn() != 2 || h.UpTo(1).Len() != 2 || h.UpTo(0).Len() != 0 {
		t.Fatalf("history: %d calls, last turn %d, %d up to turn 1", h.Len(), h.LastTurn(), h.UpTo(1).Len())
	}
	if err := h.Replayable(); err != nil {
		t.Fatalf("replayable: %v", err)
	}
	parent, err := a.Export()
	if err != nil || len(parent.Chains) != 1 || !slices.Equal(parent.Chains[0].Calls, []int{1, 2, 3}) {
		t.Fatalf("parent export: %v %+v", err, parent)
	}

	b := startGateway(t, llm.URL(), Options{EpisodeID: "ep-fork", History: h, Budgets: Budgets{MaxModelCalls: 4}})
	b.SetTurn(3)
	msgs = append(msgs, user("once more"))
	chatCall(t, b, addTools, msgs)
	reqs, resps := callEvents(b.events.list())
	if !slices.Equal(reqs, []int{4}) || !slices.Equal(resps, []int{4}) {
		t.Fatalf("B's events are of calls %v (requests) %v (responses), want [4] [4]", reqs, resps)
	}
	var r4 *wire.LLMResponse
	for _, ev := range b.events.list() {
		if r, ok := ev.Data.(*wire.LLMResponse); ok {
			r4 = r
		}
	}
	if r4.ParentCallIndex != 3 || r4.PromptTokenIDsFrom != 0 {
		t.Errorf("call 4: parent %d, prompt ids from %d; want parent 3 and full ids (B never emitted call 3)", r4.ParentCallIndex, r4.PromptTokenIDsFrom)
	}
	last := parent.Chains[0].InputIDs
	if len(r4.PromptTokenIDs) <= len(last) || !slices.Equal(r4.PromptTokenIDs[:len(last)], last) {
		t.Errorf("call 4's prompt does not extend A's last prompt+completion")
	}

	ex, err := b.Export()
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Calls) != 4 || len(ex.Chains) != 1 || !slices.Equal(ex.Chains[0].Calls, []int{1, 2, 3, 4}) {
		t.Fatalf("fork export: %d calls, chains %+v", len(ex.Calls), ex.Chains)
	}
	for _, c := range ex.Calls {
		if c.Inherited != (c.CallIndex <= 3) {
			t.Errorf("call %d: inherited %v", c.CallIndex, c.Inherited)
		}
	}
	ch := ex.Chains[0]
	if !slices.Equal(ch.InputIDs[:len(last)], last) || !slices.Equal(ch.LossMask[:len(last)], parent.Chains[0].LossMask) {
		t.Errorf("the fork's chain does not start with the parent's")
	}
	for _, sp := range ch.Spans {
		if sp.Inherited != (sp.CallIndex <= 3) {
			t.Errorf("span %+v: inherited %v", sp, sp.Inherited)
		}
	}
	for _, is := range ex.Issues {
		if is.Severity == SeverityFatal {
			t.Errorf("fork export issue %+v", is)
		}
	}
	if after, _ := a.Export(); len(after.Calls) != 3 {
		t.Errorf("the parent's export changed: %d calls", len(after.Calls))
	}

	// The budget counts the inherited calls: 3 + 1 = 4 spent, the next is refused.
	status, _ := b.post(t, "/v1/chat/completions", b.bearer(), map[string]any{"model": "m", "messages": msgs, "tools": addTools})
	if be := b.BudgetExhausted(); status != http.StatusTooManyRequests || be == nil || be.Used != 4 || be.CallIndex != 5 {
		t.Errorf("call 5 over a budget of 4 calls: status %d, %+v", status, be)
	}

	// UpTo(1): turn 1's calls only; the next call is number 3.
	c := startGateway(t, llm.URL(), Options{History: h.UpTo(1)})
	c.SetTurn(2)
	chatCall(t, c, addTools, msgs[:5])
	ex, _ = c.Export()
	if len(ex.Calls) != 3 || ex.Calls[2].CallIndex != 3 || ex.Calls[2].Parent != 2 || ex.Calls[2].Inherited || !ex.Calls[1].Inherited {
		t.Errorf("fork at turn 1: %+v", ex.Calls)
	}
}

// TestReplayAnswersFromRecord: a fork replaying a three-call conversation
// answers every call byte for byte as the parent's agent got it, without
// an engine call, in every dialect, streamed and not; requests that differ only in key order and non-model fields
// (user, metadata, headers) match. Once the record is used up the next
// call reaches the engine and extends the replayed chain.
func TestReplayAnswersFromRecord(t *testing.T) {
	var all []convo
	for _, d := range []Dialect{DialectChat, DialectAnthropic, DialectResponses, DialectGemini} {
		all = append(all, convo{d, false}, convo{d, true})
	}
	for _, c := range all {
		t.Run(fmt.Sprintf("%s/stream=%v", c.dialect, c.stream), func(t *testing.T) {
			llm := engine(t, fakellm.Options{})
			a := startGateway(t, llm.URL(), Options{})
			var recorded []answerOf
			for i := range 3 {
				a.SetTurn(i/2 + 1)
				ans := a.send(t, c.path(), c.headers(a), c.request(i, false, ""))
				if ans.status != 200 {
					t.Fatalf("call %d: %d %s", i+1, ans.status, ans.body)
				}
				recorded = append(recorded, ans)
			}
			if c.stream && !strings.HasPrefix(recorded[0].contentType, "text/event-stream") {
				t.Fatalf("a streamed answer of type %q", recorded[0].contentType)
			}
			before := generations(llm)

			var divs []Divergence
			b := startGateway(t, llm.URL(), Options{History: a.History(), Replay: true, OnDivergence: func(d Divergence) { divs = append(divs, d) }})
			for i := range 3 {
				if !b.Replaying() {
					t.Fatalf("not replaying before call %d", i+1)
				}
				b.SetTurn(i/2 + 1)
				hd := c.headers(b)
				hd["User-Agent"] = "another-agent/2"
				got := b.send(t, c.path(), hd, c.request(i, true, ""))
				if got.status != recorded[i].status || got.contentType != recorded[i].contentType || !bytes.Equal(got.body, recorded[i].body) {
					t.Fatalf("replayed call %d differs:\n got %d %s %q\nwant %d %s %q", i+1, got.status, got.contentType, got.body,
						recorded[i].status, recorded[i].contentType, recorded[i].body)
				}
			}
			if n := generations(llm); n != before {
				t.Fatalf("the replay made %d engine calls", n-before)
			}
			if b.Replaying() || b.Diverged() != nil || len(divs) != 0 || b.EndReplay() != nil {
				t.Fatalf("after the record: replaying %v, diverged %v", b.Replaying(), b.Diverged())
			}
			if reqs, resps := callEvents(b.events.list()); len(reqs)+len(resps) != 0 {
				t.Fatalf("replayed calls emitted events: %v %v", reqs, resps)
			}

			b.SetTurn(3)
			live := b.send(t, c.path(), c.headers(b), c.request(3, false, ""))
			if live.status != 200 || generations(llm) != before+1 {
				t.Fatalf("the call after the record: %d (%d engine calls)", live.status, generations(llm)-before)
			}
			ex, err := b.Export()
			if err != nil {
				t.Fatal(err)
			}
			if len(ex.Calls) != 4 || ex.Calls[3].Parent != 3 || ex.Calls[3].Inherited || len(ex.Chains) != 1 {
				t.Fatalf("export after the replay: %+v, %d chains", ex.Calls, len(ex.Chains))
			}
		})
	}
}

// TestReplayDivergence: a request unlike the recorded one (another user
// text, another sampling parameter) diverges: an error answer in the
// dialect's shape, OnDivergence once with the call and what differed,
// Diverged, no more answers from the record (nor from the engine). The
// positive control, the same request unchanged, replays.
func TestReplayDivergence(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	c := convo{DialectAnthropic, false}
	a := startGateway(t, llm.URL(), Options{})
	for i := range 3 {
		a.SetTurn(1)
		if ans := a.send(t, c.path(), c.headers(a), c.request(i, false, "")); ans.status != 200 {
			t.Fatalf("call %d: %d", i+1, ans.status)
		}
	}
	h := a.History()
	before := generations(llm)

	// The control: call 2 unchanged replays.
	var ended []Divergence
	ctl := startGateway(t, llm.URL(), Options{History: h, Replay: true, OnDivergence: func(d Divergence) { ended = append(ended, d) }})
	for i := range 2 {
		if ans := ctl.send(t, c.path(), c.headers(ctl), c.request(i, false, "")); ans.status != 200 || ctl.Diverged() != nil {
			t.Fatalf("control call %d: %d %s", i+1, ans.status, ans.body)
		}
	}
	// Ending the replay with call 3 unanswered: fewer calls than the parent made.
	if d := ctl.EndReplay(); d == nil || d.Field != "calls" || d.Index != 3 || len(ended) != 1 || ctl.Replaying() {
		t.Fatalf("ending the replay with a call left: %+v (%d reported)", d, len(ended))
	}

	for _, tc := range []struct {
		name  string
		body  func(i int) []byte
		field string
	}{
		{"user text", func(i int) []byte { return c.request(i, false, "step 1: look at the tests") }, "messages[3]"},
		{"sampling", func(i int) []byte {
			return bytes.Replace(c.request(i, false, ""), []byte(`"temperature":0.5`), []byte(`"temperature":0.9`), 1)
		}, "sampling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var divs []Divergence
			b := startGateway(t, llm.URL(), Options{History: h, Replay: true, OnDivergence: func(d Divergence) {
				mu.Lock()
				defer mu.Unlock()
				divs = append(divs, d)
			}})
			if ans := b.send(t, c.path(), c.headers(b), c.request(0, false, "")); ans.status != 200 {
				t.Fatalf("call 1: %d", ans.status)
			}
			ans := b.send(t, c.path(), c.headers(b), tc.body(1))
			var e struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			if json.Unmarshal(ans.body, &e); ans.status != http.StatusBadRequest || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "diverged") {
				t.Fatalf("the diverging call: %d %s", ans.status, ans.body)
			}
			d := b.Diverged()
			mu.Lock()
			n := len(divs)
			mu.Unlock()
			if d == nil || n != 1 || d.Door != wire.DoorModel || d.Index != 2 || d.Turn != 1 || d.Field != tc.field || d.Got == "" || d.Want == "" {
				t.Fatalf("divergence %+v (%d reported), want call 2's %s", d, n, tc.field)
			}
			if b.Replaying() {
				t.Error("still replaying after a divergence")
			}
			// Nothing more is answered, not even the recorded call 3.
			if ans := b.send(t, c.path(), c.headers(b), c.request(2, false, "")); ans.status != http.StatusBadRequest {
				t.Errorf("a call after the divergence: %d", ans.status)
			}
			if g := generations(llm); g != before {
				t.Errorf("%d engine calls after the divergence", g-before)
			}
			t.Logf("divergence: %v", d)
		})
	}
}

// TestReplayRefusedOverAnswerCap: answers past MaxRecordedAnswerBytes are
// not kept; the History still holds every call for the chains, but a
// replay is refused with an error naming the cap and its option.
func TestReplayRefusedOverAnswerCap(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	c := convo{DialectChat, true}
	a := startGateway(t, llm.URL(), Options{MaxRecordedAnswerBytes: 1500})
	sizes := 0
	for i := range 3 {
		a.SetTurn(i + 1)
		ans := a.send(t, c.path(), c.headers(a), c.request(i, false, ""))
		sizes += len(ans.body)
	}
	if sizes <= 1500 {
		t.Fatalf("the answers hold %d bytes: not over the cap", sizes)
	}
	h := a.History()
	if h.Len() != 3 {
		t.Fatalf("history of %d calls", h.Len())
	}
	if h.calls[0].answer == nil || h.calls[2].answer != nil {
		t.Fatalf("kept answers: first %v, last %v; want the first only", h.calls[0].answer != nil, h.calls[2].answer != nil)
	}
	if err := h.UpTo(1).Replayable(); err != nil {
		t.Errorf("the history up to the cap is not replayable: %v", err)
	}
	_, err := New(Options{Upstream: Upstream{URL: llm.URL() + "/v1"}, History: h, Replay: true})
	if !errors.Is(err, ErrAnswersNotRecorded) || !strings.Contains(err.Error(), "MaxRecordedAnswerBytes") || !strings.Contains(err.Error(), "1500") {
		t.Fatalf("replay over the cap: %v", err)
	}
	b := startGateway(t, llm.URL(), Options{History: h})
	ex, _ := b.Export()
	if len(ex.Chains) != 1 || len(ex.Chains[0].Calls) != 3 {
		t.Fatalf("the history's chain: %+v", ex.Chains)
	}
	// Recording off: nothing is replayable.
	off := startGateway(t, llm.URL(), Options{MaxRecordedAnswerBytes: -1})
	off.send(t, c.path(), c.headers(off), c.request(0, false, ""))
	if err := off.History().Replayable(); !errors.Is(err, ErrAnswersNotRecorded) {
		t.Fatalf("recording off: %v", err)
	}
}

// TestReplayPassthrough: a fork of an episode behind a hosted provider
// (passthrough, evaluation traffic) replays the provider's streamed
// answers byte for byte without a request to the provider, then goes
// live.
func TestReplayPassthrough(t *testing.T) {
	provider := fakellm.New(fakellm.Options{})
	if _, err := provider.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { provider.Close() })
	opts := Options{Upstream: Upstream{Kind: UpstreamPassthrough, URL: provider.URL(), Dialect: DialectAnthropic}}
	c := convo{DialectAnthropic, true}
	a := startGateway(t, "", opts)
	var recorded []answerOf
	for i := range 2 {
		ans := a.send(t, c.path(), c.headers(a), c.request(i, false, ""))
		if ans.status != 200 || !strings.Contains(string(ans.body), "message_stop") {
			t.Fatalf("call %d: %d %s", i+1, ans.status, ans.body)
		}
		recorded = append(recorded, ans)
	}
	before := len(provider.Requests())
	opts.History, opts.Replay = a.History(), true
	b := startGateway(t, "", opts)
	for i := range 2 {
		if got := b.send(t, c.path(), c.headers(b), c.request(i, true, "")); !bytes.Equal(got.body, recorded[i].body) || got.contentType != recorded[i].contentType {
			t.Fatalf("replayed call %d differs: %s", i+1, got.body)
		}
	}
	if n := len(provider.Requests()); n != before {
		t.Fatalf("the replay sent %d requests to the provider", n-before)
	}
	if ans := b.send(t, c.path(), c.headers(b), c.request(2, false, "")); ans.status != 200 || len(provider.Requests()) != before+1 {
		t.Fatalf("after the record: %d, %d provider requests", ans.status, len(provider.Requests())-before)
	}
}

// TestReplayConcurrentCallsInAnyOrder: calls of one turn that an agent
// makes concurrently (a side call beside its main one) may reach a fork's
// gateway in another order than the parent's did: each is answered with
// its own recorded answer. A call of a later turn before the turn's
// recorded calls are answered diverges (the control).
func TestReplayConcurrentCallsInAnyOrder(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	c := convo{DialectChat, false}
	title, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{user("Write a title for: look at the code")}})
	a := startGateway(t, llm.URL(), Options{})
	a.SetTurn(1)
	main1 := a.send(t, c.path(), c.headers(a), c.request(0, false, ""))
	aux := a.send(t, c.path(), c.headers(a), title)
	a.SetTurn(2)
	main2 := a.send(t, c.path(), c.headers(a), c.request(1, false, ""))
	h := a.History()
	before := generations(llm)

	b := startGateway(t, llm.URL(), Options{History: h, Replay: true})
	b.SetTurn(1)
	for _, step := range []struct {
		body []byte
		want answerOf
	}{{title, aux}, {c.request(0, false, ""), main1}, {c.request(1, false, ""), main2}} {
		if got := b.send(t, c.path(), c.headers(b), step.body); !bytes.Equal(got.body, step.want.body) {
			t.Fatalf("replayed %s, want %s", got.body, step.want.body)
		}
	}
	if b.Replaying() || b.Diverged() != nil || generations(llm) != before {
		t.Fatalf("after the record: replaying %v, diverged %v, %d engine calls", b.Replaying(), b.Diverged(), generations(llm)-before)
	}

	ctl := startGateway(t, llm.URL(), Options{History: h, Replay: true})
	if got := ctl.send(t, c.path(), c.headers(ctl), c.request(1, false, "")); got.status != http.StatusBadRequest {
		t.Fatalf("turn 2's call first: %d %s", got.status, got.body)
	}
	if d := ctl.Diverged(); d == nil || d.Index != 1 || d.Field != "tools" && !strings.HasPrefix(d.Field, "messages") {
		t.Fatalf("divergence %+v, want against call 1", d)
	}
}
