package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/benchrow"
	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// growingWindow is how many calls at each end of the conversation the
// first/last figures take the median of (one call alone is noise).
const growingWindow = 10

// growingCalls is the conversation's length.
const growingCalls = 300

// turnEnd is what the daemon does with the gateway when turn n ends: it
// grades the turn's calls for the observation (episode.ModelIssues). Before
// the capture change it was a full Export.
func turnEnd(g *Gateway, n int) {
	if _, err := g.TurnIssues(n); err != nil {
		panic(err)
	}
}

// BenchmarkGatewayGrowing measures capture as an episode grows: a
// conversation of 300 calls in which each call's prompt
// is the previous prompt, its completion and a new user message, as an
// agent's turns are. Each call goes through a fresh episode's gateway and,
// alternating, through a bare reverse proxy sending the engine the same
// upstream bytes. Reported, as the median over 3 conversations with the
// spread: the gateway's call at the end (median of the last 10 calls) over
// its call at the start (the first 10), budget ≤ 1.2; and the gateway's
// call at the end over the bare proxy's, budget ≤ 1.5; and the gateway's
// overhead (its call and the turn end minus the bare proxy's call) at
// each end. A call's cost includes its turn end (turnEnd).
//
// Each run takes three conversations whatever b.N: run it with -benchtime 1x.
func BenchmarkGatewayGrowing(b *testing.B) {
	n := growingCalls
	llm := engine(b, fakellm.Options{})
	up := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(up.CloseIdleConnections)
	proxy := serveProxy(b, llm.URL())
	tg, tp := &http.Transport{}, &http.Transport{}
	b.Cleanup(func() { tg.CloseIdleConnections(); tp.CloseIdleConnections() })
	cg, cp := &http.Client{Transport: tg}, &http.Client{Transport: tp}
	// hyg turns an agent body into the upstream bytes the gateway sends.
	hyg, err := New(Options{Upstream: Upstream{URL: "http://127.0.0.1:1/v1"}})
	if err != nil {
		b.Fatal(err)
	}
	upstreamOf := func(agent []byte) []byte {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(agent, &fields); err != nil {
			b.Fatal(err)
		}
		body, _, err := hyg.engineBody(fields, 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		return body
	}
	// conversation runs one episode of calls; with timed set it returns
	// per call the gateway's and the bare proxy's durations.
	conversation := func(calls int, timed bool) (gw, bare []time.Duration, last int) {
		g := startGateway(b, llm.URL(), Options{OnEvent: func(wire.Event) {}, HTTPClient: &http.Client{Transport: up}})
		msgs := []any{map[string]any{"role": "system", "content": strings.Repeat("You are a careful coding agent. ", 60)}}
		for i := range calls {
			g.SetTurn(i + 1)
			text := fmt.Sprintf("step %d: look at the code and fix what is wrong", i)
			msgs = append(msgs, user(text))
			agent, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "tools": addTools, "temperature": 0.6, "max_tokens": 4096})
			upstream := upstreamOf(agent)
			t0 := time.Now()
			if err := postBench(cg, g.base+"/v1/chat/completions", g.bearer(), agent); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := postBench(cp, proxy+"/v1/chat/completions", nil, upstream); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			turnEnd(g.Gateway, i+1)
			t3 := time.Now()
			if timed {
				gw, bare = append(gw, t1.Sub(t0)+t3.Sub(t2)), append(bare, t2.Sub(t1))
			}
			// The engine answers "MOCK-REPLY: <the user's text>"; the agent
			// sends it back unchanged, so the call extends the previous one.
			msgs = append(msgs, map[string]any{"role": "assistant", "content": "MOCK-REPLY: " + text})
		}
		ex, err := g.Export()
		if err != nil {
			b.Fatal(err)
		}
		if len(ex.Chains) != 1 || len(ex.Chains[0].Calls) != calls {
			b.Fatalf("the conversation is not one chain of %d calls: %d chains", calls, len(ex.Chains))
		}
		return gw, bare, ex.Calls[len(ex.Calls)-1].PromptTokens
	}
	conversation(growingWindow, false) // warm both paths and their pools
	var endStart, endBare, first, final, finalBare, firstBare, overFirst, overLast, overRatio []float64
	var tokens int
	b.ResetTimer()
	for range 3 {
		gw, bare, last := conversation(n, true)
		tokens = last
		f, l := median(gw[:growingWindow]), median(gw[n-growingWindow:])
		fb, lb := median(bare[:growingWindow]), median(bare[n-growingWindow:])
		first, final, finalBare = append(first, us(f)), append(final, us(l)), append(finalBare, us(lb))
		firstBare = append(firstBare, us(fb))
		var fo, lo []time.Duration
		for i := range gw {
			if i < growingWindow {
				fo = append(fo, gw[i]-bare[i])
			} else if i >= n-growingWindow {
				lo = append(lo, gw[i]-bare[i])
			}
		}
		overFirst, overLast = append(overFirst, us(median(fo))), append(overLast, us(median(lo)))
		overRatio = append(overRatio, float64(median(lo))/float64(median(fo)))
		endStart, endBare = append(endStart, float64(l)/float64(f)), append(endBare, float64(l)/float64(lb))
	}
	b.StopTimer()
	fs, ls, lbs := benchrow.Of(first), benchrow.Of(final), benchrow.Of(finalBare)
	es, eb := benchrow.Of(endStart), benchrow.Of(endBare)
	fbs, ofs, ols, ors := benchrow.Of(firstBare), benchrow.Of(overFirst), benchrow.Of(overLast), benchrow.Of(overRatio)
	b.ReportMetric(fs.Med, "first-µs")
	b.ReportMetric(ls.Med, "last-µs")
	b.ReportMetric(lbs.Med, "last-proxy-µs")
	b.ReportMetric(es.Med, "last/first")
	fmt.Printf("\nBENCH gateway growing conversation of %d calls (%d prompt tokens at the end): call p50 %s µs at calls 1–%d, %s µs at the last %d (bare proxy %s µs): last/first %s (budget ≤ 1.2), last vs bare %s (budget ≤ 1.5); the gateway's overhead over the bare proxy (per call, the call and the turn end minus the proxy's call) %s µs at the start (proxy %s µs), %s µs at the end: end/start %s (budget ≤ 1.2); 3 conversations\n",
		n, tokens, fs.Format("%.0f"), growingWindow, ls.Format("%.0f"), growingWindow, lbs.Format("%.0f"), es.Format("%.2f"), eb.Format("%.2f"),
		ofs.Format("%.0f"), fbs.Format("%.0f"), ols.Format("%.0f"), ors.Format("%.2f"))
	benchrow.Row(fmt.Sprintf("gateway call at call %d vs call 1 of a growing conversation", n),
		ls.Format("%.0f")+" µs", fs.Format("%.0f")+" µs (call 1, same run)", es.Format("%.2f"), "≤ 1.2×", benchrow.Verdict(es, 1.2, true))
	benchrow.Row(fmt.Sprintf("gateway call at call %d of a growing conversation vs a bare reverse proxy", n),
		ls.Format("%.0f")+" µs", lbs.Format("%.0f")+" µs (bare proxy)", eb.Format("%.2f"), "≤ 1.5×", benchrow.Verdict(eb, 1.5, true))
	benchrow.Row(fmt.Sprintf("gateway's own cost (minus the bare proxy) at call %d vs call 1 of a growing conversation", n),
		ols.Format("%.0f")+" µs", ofs.Format("%.0f")+" µs (call 1, same run)", ors.Format("%.2f"), "≤ 1.2×", benchrow.Verdict(ors, 1.2, true))
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// BenchmarkCaptureGrowing isolates capture from HTTP and JSON: the calls
// of a 300-call growing conversation (each prompt the previous prompt, its
// completion and a new user message, as the fake engine tokenizes them)
// recorded into a fresh gateway one by one, each followed by its turn's
// grading (TurnIssues). The prompts' ids are read as the gateway reads
// the engine's prompt_token_ids (idsMemo: a conversation's prompts share
// their array). Reported, as the median over 3 episodes with the spread:
// the cost of the last 10 calls over the first 10's; for comparison the
// same with each prompt in an array of its own (as after a memo miss),
// and a full Export at the end (what every turn end paid before).
//
// Each run takes three episodes whatever b.N: run it with -benchtime 1x.
func BenchmarkCaptureGrowing(b *testing.B) {
	shared, own := growingCaptureCalls(b)
	b.ResetTimer()
	fs, ls, rs, es := captureEpisodes(b, shared)
	ofs, ols, ors, _ := captureEpisodes(b, own)
	b.StopTimer()
	b.ReportMetric(rs.Med, "last/first")
	fmt.Printf("\nBENCH capture of a growing conversation of %d calls (%d prompt tokens at the end): record + turn grading p50 %s µs at calls 1–%d, %s µs at the last %d: last/first %s (budget ≤ 1.2); with each prompt in an array of its own %s → %s µs (%s); a full Export at the end %s µs; 3 episodes each\n",
		growingCalls, len(shared[len(shared)-1][0]), fs.Format("%.1f"), growingWindow, ls.Format("%.1f"), growingWindow, rs.Format("%.2f"),
		ofs.Format("%.1f"), ols.Format("%.1f"), ors.Format("%.2f"), es.Format("%.0f"))
	benchrow.Row(fmt.Sprintf("capture (record + turn grading) at call %d vs call 1 of a growing conversation", growingCalls),
		ls.Format("%.1f")+" µs", fs.Format("%.1f")+" µs (call 1, same run)", rs.Format("%.2f"), "≤ 1.2×", benchrow.Verdict(rs, 1.2, true))
}

// growingCaptureCalls returns the prompt and completion ids of a growing
// conversation's calls, the prompts as idsMemo reads them from the
// engine's lists (shared) and each in an array of its own (own).
func growingCaptureCalls(b *testing.B) (shared, own [][2][]int) {
	sys := fakellm.EngineTokenize("<|im_start|>system\n" + strings.Repeat("You are a careful coding agent. ", 60) + "<|im_end|>\n")
	var memo idsMemo
	prompt := sys
	for i := range growingCalls {
		text := fmt.Sprintf("step %d: look at the code and fix what is wrong", i)
		prompt = append(slices.Clone(prompt), fakellm.EngineTokenize("<|im_start|>user\n"+text+"<|im_end|>\n<|im_start|>assistant\n")...)
		comp := fakellm.EngineTokenize(fakellm.EngineRenderCompletion("MOCK-REPLY: "+text, nil))
		list, err := json.Marshal(prompt)
		if err != nil {
			b.Fatal(err)
		}
		ids, _, err := memo.parse(list, nil)
		if err != nil || !slices.Equal(ids, prompt) {
			b.Fatalf("call %d: the memo read other ids (%v)", i+1, err)
		}
		shared = append(shared, [2][]int{ids, comp})
		own = append(own, [2][]int{slices.Clone(prompt), comp})
		prompt = append(slices.Clone(prompt), append(comp, fakellm.EngineTokenize("\n")...)...)
	}
	return shared, own
}

// captureEpisodes records calls into 3 fresh gateways, each call followed
// by its turn's grading, and returns the medians of the first and last
// calls' costs, their ratio and a full Export's cost at the end.
func captureEpisodes(b *testing.B, calls [][2][]int) (first, last, ratio, export benchrow.Spread) {
	var ratios, fs, ls, ex []float64
	for range 3 {
		g := &Gateway{opts: Options{Upstream: Upstream{Kind: UpstreamEngine}}}
		var took []time.Duration
		for i, pc := range calls {
			c := &call{index: i + 1, turn: i + 1, traffic: TrafficTraining, offersTools: true,
				promptIDs: pc[0], completionIDs: pc[1], logprobs: make([]float64, len(pc[1]))}
			t0 := time.Now()
			g.record(c)
			if _, err := g.TurnIssues(i + 1); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(t0))
		}
		f, l := median(took[:growingWindow]), median(took[len(took)-growingWindow:])
		fs, ls, ratios = append(fs, us(f)), append(ls, us(l)), append(ratios, float64(l)/float64(f))
		t0 := time.Now()
		e, err := g.Export()
		if err != nil {
			b.Fatal(err)
		}
		ex = append(ex, us(time.Since(t0)))
		if len(e.Chains) != 1 {
			b.Fatalf("%d chains, want 1", len(e.Chains))
		}
	}
	return benchrow.Of(fs), benchrow.Of(ls), benchrow.Of(ratios), benchrow.Of(ex)
}
