package gateway

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

// chatCall posts one non-streamed chat request and returns the assistant
// message to send back next time, as an agent would.
func chatCall(t *testing.T, gw *testGateway, tools any, msgs []any) map[string]any {
	t.Helper()
	req := map[string]any{"model": "m", "messages": msgs}
	if tools != nil {
		req["tools"] = tools
	}
	status, body := gw.post(t, "/v1/chat/completions", gw.bearer(), req)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var a chatAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	m := a.Choices[0].Message
	out := map[string]any{"role": "assistant", "content": m.Content}
	if len(m.ToolCalls) > 0 {
		var calls []any
		for _, tc := range m.ToolCalls {
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Function.Name, "arguments": tc.Function.Arguments}})
		}
		out["tool_calls"] = calls
	}
	return out
}

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

// TestExportChainsAndMasks runs a two-turn episode with a tool call, an
// auxiliary title call and a compaction, decodes the export and checks
// that ids, masks, logprobs and spans line up with the engine's ids.
func TestExportChainsAndMasks(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{EpisodeID: "ep-export"})

	gw.SetTurn(1)
	sys := map[string]any{"role": "system", "content": "You are a coder."}
	msgs := []any{sys, user(`call add {"a":2,"b":3}`)}
	a1 := chatCall(t, gw, addTools, msgs) // call 1: tool call
	msgs = append(msgs, a1, map[string]any{"role": "tool", "tool_call_id": "x", "content": "5"})
	chatCall(t, gw, nil, []any{user("Write a title for: add numbers")}) // call 2: auxiliary
	a3 := chatCall(t, gw, addTools, msgs)                               // call 3: answer
	msgs = append(msgs, a3)
	gw.SetReward(1, 0.5)

	gw.SetTurn(2)
	msgs = append(msgs, user("and again"))
	a4 := chatCall(t, gw, addTools, msgs) // call 4: extends chain 1
	compacted := []any{sys, user("Summary: we added 2 and 3. and again")}
	chatCall(t, gw, addTools, compacted) // call 5: a break, chain 2
	gw.SetReward(2, 1)
	_ = a4

	ex, err := gw.Export()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	var got Export
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Format != ExportFormat || got.EpisodeID != "ep-export" || len(got.Calls) != 5 || len(got.Chains) != 2 {
		t.Fatalf("export %s", raw)
	}
	if len(got.Rewards) != 2 || got.Rewards[0] != (Reward{1, 0.5}) || got.Rewards[1] != (Reward{2, 1}) {
		t.Errorf("rewards %+v", got.Rewards)
	}
	for _, is := range got.Issues {
		if is.Severity == SeverityFatal || (is.Code != IssueChainBreak) {
			t.Errorf("unexpected issue %+v", is)
		}
	}
	if !got.Calls[1].Auxiliary || got.Calls[1].Chain != 0 {
		t.Errorf("title call not auxiliary: %+v", got.Calls[1])
	}
	wantChain := map[int][2]int{1: {1, 0}, 3: {1, 1}, 4: {1, 3}, 5: {2, 0}} // call -> chain, parent
	for _, c := range got.Calls {
		if w, ok := wantChain[c.CallIndex]; ok && (c.Chain != w[0] || c.Parent != w[1]) {
			t.Errorf("call %d: chain %d parent %d, want %v", c.CallIndex, c.Chain, c.Parent, w)
		}
	}

	// The engine's own ids for each call, from the fake's log.
	engineIDs := map[int][2][]int{}
	for i, e := range llm.Requests() {
		var req struct {
			Tools    json.RawMessage         `json:"tools"`
			Messages []fakellm.EngineMessage `json:"messages"`
		}
		json.Unmarshal(e.Body, &req)
		var calls [][2]string
		for _, rc := range e.ReplyCalls {
			name, args, _ := cut(rc, " ")
			calls = append(calls, [2]string{name, args})
		}
		engineIDs[i+1] = [2][]int{fakellm.EngineTokenize(fakellm.EngineRenderPrompt(req.Tools, req.Messages)),
			fakellm.EngineTokenize(fakellm.EngineRenderCompletion(e.ReplyText, calls))}
	}

	ch := got.Chains[0]
	last := engineIDs[4]
	if !equalInts(ch.InputIDs, append(append([]int{}, last[0]...), last[1]...)) {
		t.Fatalf("chain 1 is not call 4's prompt + completion")
	}
	if len(ch.LossMask) != len(ch.InputIDs) || len(ch.Logprobs) != len(ch.InputIDs) {
		t.Fatalf("lengths %d/%d/%d", len(ch.InputIDs), len(ch.LossMask), len(ch.Logprobs))
	}
	if ch.PromptLength != len(engineIDs[1][0]) || len(ch.Calls) != 3 {
		t.Errorf("prompt length %d, calls %v", ch.PromptLength, ch.Calls)
	}
	wantSpans := []struct {
		kind       string
		call, turn int
	}{{SpanPrompt, 1, 1}, {SpanCompletion, 1, 1}, {SpanPrompt, 3, 1}, {SpanCompletion, 3, 1}, {SpanPrompt, 4, 2}, {SpanCompletion, 4, 2}}
	if len(ch.Spans) != len(wantSpans) {
		t.Fatalf("spans %+v", ch.Spans)
	}
	pos := 0
	for i, s := range ch.Spans {
		w := wantSpans[i]
		if s.Kind != w.kind || s.CallIndex != w.call || s.Turn != w.turn || s.Start != pos {
			t.Errorf("span %d = %+v, want %+v from %d", i, s, w, pos)
		}
		pos = s.End
		if s.Kind == SpanCompletion {
			if !equalInts(ch.InputIDs[s.Start:s.End], engineIDs[s.CallIndex][1]) {
				t.Errorf("completion span of call %d differs from the engine's ids", s.CallIndex)
			}
			if s.Start != len(engineIDs[s.CallIndex][0]) {
				t.Errorf("completion of call %d starts at %d, its prompt has %d ids", s.CallIndex, s.Start, len(engineIDs[s.CallIndex][0]))
			}
		}
		for j := s.Start; j < s.End; j++ {
			mask, lp := ch.LossMask[j], ch.Logprobs[j]
			if s.Kind == SpanCompletion {
				if mask != 1 || lp == nil || *lp != fakellm.EngineLogprob(ch.InputIDs[j], j-s.Start) {
					t.Fatalf("sampled position %d: mask %d logprob %v", j, mask, lp)
				}
			} else if mask != 0 || lp != nil {
				t.Fatalf("prompt position %d: mask %d logprob %v", j, mask, lp)
			}
		}
	}
	if pos != len(ch.InputIDs) {
		t.Errorf("spans end at %d of %d", pos, len(ch.InputIDs))
	}
	c2 := got.Chains[1]
	if !equalInts(c2.InputIDs, append(append([]int{}, engineIDs[5][0]...), engineIDs[5][1]...)) || c2.Spans[0].Turn != 2 {
		t.Errorf("chain 2 is not call 5")
	}
	if issues := got.Validate(); len(issues) != 0 {
		t.Errorf("decoded export does not validate: %+v", issues)
	}

	// A masked position carrying a logprob is caught.
	bad := got.Chains[0]
	x := -0.5
	bad.Logprobs = append([]*float64{&x}, bad.Logprobs[1:]...)
	corrupt := Export{Chains: []Chain{bad}}
	if is := corrupt.Validate(); len(is) == 0 || is[0].Code != IssueMaskedLogprob || is[0].Severity != SeverityFatal {
		t.Errorf("masked logprob not reported: %+v", is)
	}
	short := got.Chains[1]
	short.LossMask = short.LossMask[1:]
	corrupt = Export{Chains: []Chain{short}}
	if is := corrupt.Validate(); len(is) == 0 || is[0].Code != IssueMisaligned {
		t.Errorf("misaligned chain not reported: %+v", is)
	}
}

func cut(s, sep string) (string, string, bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// TestIngestValidation: an engine answer without ids, with text tokens or
// with string logprobs is graded, and kept out of the chains when fatal.
func TestIngestValidation(t *testing.T) {
	msgs := []any{user("hi")}
	t.Run("no ids", func(t *testing.T) {
		plain := fakellm.New(fakellm.Options{}) // a chat server that ignores return_token_ids
		if _, err := plain.Start(""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { plain.Close() })
		gw := startGateway(t, plain.URL(), Options{})
		chatCall(t, gw, nil, msgs)
		ex, _ := gw.Export()
		if !hasIssue(ex.Issues, IssueMissingTokenIDs, SeverityFatal) || !hasIssue(ex.Issues, IssueMissingLogprobs, SeverityFatal) ||
			!hasIssue(ex.Issues, IssueNoTrainingCalls, SeverityWarn) || len(ex.Chains) != 0 {
			t.Errorf("export %+v", ex)
		}
		if r := gw.events.responses()[1]; r == nil || r.Extra["issues"] == nil {
			t.Errorf("llm_response does not carry the issues")
		}
	})
	t.Run("tokens as text", func(t *testing.T) {
		gw := startGateway(t, engine(t, fakellm.Options{EngineTokensAsText: true}).URL(), Options{})
		chatCall(t, gw, nil, msgs)
		ex, _ := gw.Export()
		if !hasIssue(ex.Issues, IssueTokensAsText, SeverityWarn) || len(ex.Chains) != 1 {
			t.Errorf("export %+v", ex)
		}
	})
	t.Run("logprobs as strings", func(t *testing.T) {
		up := serveFixed(t, http.StatusOK, `{"id":"x","model":"m","prompt_token_ids":[1,2,3],"choices":[{"index":0,
			"message":{"role":"assistant","content":"ok"},"token_ids":[7,8],"finish_reason":"stop",
			"logprobs":{"content":[{"token":"token_id:7","logprob":"-0.5"},{"token":"token_id:8","logprob":"-0.25"}]}}]}`)
		gw := startGateway(t, up, Options{})
		chatCall(t, gw, nil, msgs)
		ex, _ := gw.Export()
		if !hasIssue(ex.Issues, IssueLogprobNotNumber, SeverityFatal) || len(ex.Chains) != 0 {
			t.Errorf("export %+v", ex)
		}
	})
	t.Run("single agentic call", func(t *testing.T) {
		gw := startGateway(t, engine(t, fakellm.Options{}).URL(), Options{})
		chatCall(t, gw, addTools, msgs)
		ex, _ := gw.Export()
		if !hasIssue(ex.Issues, IssueSingleCall, SeverityWarn) {
			t.Errorf("export %+v", ex.Issues)
		}
	})
}

func hasIssue(issues []Issue, code string, sev Severity) bool {
	for _, i := range issues {
		if i.Code == code && i.Severity == sev {
			return true
		}
	}
	return false
}

// serveFixed serves one fixed answer to every request on 127.0.0.1 and
// returns its base URL (without /v1).
func serveFixed(t testing.TB, status int, body string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	})}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return "http://" + ln.Addr().String()
}
