package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/benchrow"
	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// recorder is an upstream transport that keeps each answer's body.
type recorder struct {
	next    http.RoundTripper
	answers [][]byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	r.answers = append(r.answers, body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// replayer is an upstream transport that reads each request's body whole
// and answers the recorded answers in order, as an engine that sends no
// Content-Length (the fake engine's are chunked).
type replayer struct{ answers [][]byte }

func (r *replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return nil, err
	}
	req.Body.Close()
	if len(r.answers) == 0 {
		return nil, fmt.Errorf("no answer left")
	}
	a := r.answers[0]
	r.answers = r.answers[1:]
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(a)), ContentLength: -1, Request: req}, nil
}

// growingAgentBodies returns the agent's requests of a growing
// conversation (as BenchmarkGatewayGrowing sends them) and the fake
// engine's answers to them, recorded through a gateway.
func growingAgentBodies(b *testing.B, calls int) (agent, answers [][]byte) {
	llm := engine(b, fakellm.Options{})
	rec := &recorder{next: &http.Transport{}}
	g := startGateway(b, llm.URL(), Options{HTTPClient: &http.Client{Transport: rec}})
	msgs := []any{map[string]any{"role": "system", "content": strings.Repeat("You are a careful coding agent. ", 60)}}
	for i := range calls {
		text := fmt.Sprintf("step %d: look at the code and fix what is wrong", i)
		msgs = append(msgs, user(text))
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "tools": addTools, "temperature": 0.6, "max_tokens": 4096})
		if status, out := g.post(b, "/v1/chat/completions", g.bearer(), body); status != http.StatusOK {
			b.Fatalf("call %d: status %d: %s", i+1, status, out)
		}
		agent = append(agent, body)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "MOCK-REPLY: " + text})
	}
	return agent, rec.answers
}

// BenchmarkGatewayGrowingInMemory is BenchmarkGatewayGrowing without
// sockets and without the engine's work: the gateway's handler serves
// the 300 calls of a growing conversation (each with its turn end)
// in-process, its upstream answering the fake engine's recorded answers
// from memory. What is left is the gateway's own work per call (read,
// decode, hygiene, the body sent, the answer read and parsed, capture,
// events, the agent's answer), and the copies of the bytes a socket would
// make (the agent's body read, the engine body written, the answer read:
// 15 KB at call 1, 200 KB at call 300). Reported, as the median over 3
// conversations with the spread, the median of the last 10 calls over the
// first 10's.
//
// Each run takes three conversations whatever b.N: run it with -benchtime 1x.
func BenchmarkGatewayGrowingInMemory(b *testing.B) {
	agent, answers := growingAgentBodies(b, growingCalls)
	var first, last, ratios []float64
	b.ResetTimer()
	for range 3 {
		g, err := New(Options{Upstream: Upstream{URL: "http://127.0.0.1:1/v1"}, OnEvent: func(wire.Event) {},
			HTTPClient: &http.Client{Transport: &replayer{answers: answers}}})
		if err != nil {
			b.Fatal(err)
		}
		var took []time.Duration
		for i, body := range agent {
			g.SetTurn(i + 1)
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+g.Key())
			w := httptest.NewRecorder()
			t0 := time.Now()
			g.ServeHTTP(w, req)
			turnEnd(g, i+1)
			took = append(took, time.Since(t0))
			if w.Code != http.StatusOK {
				b.Fatalf("call %d: status %d: %s", i+1, w.Code, w.Body)
			}
		}
		f, l := median(took[:growingWindow]), median(took[len(took)-growingWindow:])
		first, last, ratios = append(first, us(f)), append(last, us(l)), append(ratios, float64(l)/float64(f))
	}
	b.StopTimer()
	fs, ls, rs := benchrow.Of(first), benchrow.Of(last), benchrow.Of(ratios)
	b.ReportMetric(rs.Med, "last/first")
	fmt.Printf("\nBENCH gateway handler in memory (no sockets, the engine's answers recorded), a growing conversation of %d calls: per call p50 %s µs at calls 1–%d, %s µs at the last %d: last/first %s (the bytes read and written grow 20×); 3 conversations\n",
		growingCalls, fs.Format("%.0f"), growingWindow, ls.Format("%.0f"), growingWindow, rs.Format("%.2f"))
}
