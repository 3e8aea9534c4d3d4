package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/benchrow"
	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// BenchmarkGatewayReplay measures a fork's replay of a 300-call growing
// conversation (each call's prompt the previous prompt, its completion and
// a new user message, as in BenchmarkGatewayGrowing) against the same
// conversation live through the fake engine: a parent gateway makes the
// calls live, recording their answers; a gateway opened with its History
// and Replay answers the same requests from the record. A third,
// identical live conversation keeps no answers (MaxRecordedAnswerBytes
// < 0), which prices recording. Reported, as the median over 3
// conversations with the spread: the whole conversation's wall time live
// and replayed, the per-call p50 at the end (the last 10 calls) of each,
// the replay's ratio to live, recording's cost on a live call, and what
// the record holds (answer bytes). The replay must make no engine call
// and answer byte for byte (checked).
//
// Each run takes three conversations whatever b.N: run it with -benchtime 1x.
func BenchmarkGatewayReplay(b *testing.B) {
	n := growingCalls
	llm := engine(b, fakellm.Options{})
	up := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(up.CloseIdleConnections)
	tc := &http.Transport{}
	b.Cleanup(tc.CloseIdleConnections)
	cl := &http.Client{Transport: tc}
	bodies := make([][]byte, n)
	msgs := []any{map[string]any{"role": "system", "content": strings.Repeat("You are a careful coding agent. ", 60)}}
	for i := range n {
		text := fmt.Sprintf("step %d: look at the code and fix what is wrong", i)
		msgs = append(msgs, user(text))
		bodies[i], _ = json.Marshal(map[string]any{"model": "m", "messages": msgs, "tools": addTools, "temperature": 0.6, "max_tokens": 4096})
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "MOCK-REPLY: " + text})
	}
	// run sends the conversation through g, returning each call's duration
	// and answer.
	run := func(g *testGateway) ([]time.Duration, [][]byte) {
		took, answers := make([]time.Duration, n), make([][]byte, n)
		for i, body := range bodies {
			g.SetTurn(i + 1)
			req, _ := http.NewRequest(http.MethodPost, g.base+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+g.Key())
			t0 := time.Now()
			resp, err := cl.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			answers[i], err = io.ReadAll(resp.Body)
			resp.Body.Close()
			took[i] = time.Since(t0)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("call %d: %d %v %s", i+1, resp.StatusCode, err, answers[i])
			}
		}
		return took, answers
	}
	quiet := func(o Options) Options {
		o.OnEvent, o.HTTPClient = func(wire.Event) {}, &http.Client{Transport: up}
		return o
	}
	run(startGateway(b, llm.URL(), quiet(Options{}))) // warm the pools
	sum := func(d []time.Duration) float64 {
		var t time.Duration
		for _, x := range d {
			t += x
		}
		return float64(t) / 1e6
	}
	var liveTotal, replayTotal, ratio, liveEnd, replayEnd, bareEnd, recCost, answerMiB []float64
	b.ResetTimer()
	for range 3 {
		bare, _ := run(startGateway(b, llm.URL(), quiet(Options{MaxRecordedAnswerBytes: -1})))
		parent := startGateway(b, llm.URL(), quiet(Options{}))
		live, want := run(parent)
		h := parent.History()
		before := generations(llm)
		fork := startGateway(b, llm.URL(), quiet(Options{History: h, Replay: true}))
		replay, got := run(fork)
		if generations(llm) != before {
			b.Fatalf("the replay made %d engine calls", generations(llm)-before)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				b.Fatalf("replayed answer %d differs", i+1)
			}
		}
		var held int64
		for _, c := range h.calls {
			held += c.answer.size()
		}
		lt, rt := sum(live), sum(replay)
		liveTotal, replayTotal, ratio = append(liveTotal, lt), append(replayTotal, rt), append(ratio, rt/lt)
		le, re, be := median(live[n-growingWindow:]), median(replay[n-growingWindow:]), median(bare[n-growingWindow:])
		liveEnd, replayEnd, bareEnd = append(liveEnd, us(le)), append(replayEnd, us(re)), append(bareEnd, us(be))
		recCost = append(recCost, us(median(live))-us(median(bare)))
		answerMiB = append(answerMiB, float64(held)/(1<<20))
	}
	b.StopTimer()
	lt, rt, rr := benchrow.Of(liveTotal), benchrow.Of(replayTotal), benchrow.Of(ratio)
	le, re, be, rc, am := benchrow.Of(liveEnd), benchrow.Of(replayEnd), benchrow.Of(bareEnd), benchrow.Of(recCost), benchrow.Of(answerMiB)
	b.ReportMetric(rt.Med, "replay-ms")
	b.ReportMetric(lt.Med, "live-ms")
	b.ReportMetric(rr.Med, "replay/live")
	fmt.Printf("\nBENCH gateway replay of a growing conversation of %d calls: replayed in %s ms, live through the fake engine %s ms (replay/live %s), no engine call; per call at the last %d: replay %s µs, live %s µs (live without recording answers %s µs); recording answers costs %s µs per live call (p50 difference); the record holds %s MiB of answers; 3 conversations\n",
		n, rt.Format("%.1f"), lt.Format("%.1f"), rr.Format("%.2f"), growingWindow, re.Format("%.0f"), le.Format("%.0f"), be.Format("%.0f"), rc.Format("%.1f"), am.Format("%.2f"))
	benchrow.Row(fmt.Sprintf("gateway replay of a %d-call growing conversation vs the same live through the fake engine", n),
		rt.Format("%.1f")+" ms", lt.Format("%.1f")+" ms (live)", rr.Format("%.2f"), "", "")
}
