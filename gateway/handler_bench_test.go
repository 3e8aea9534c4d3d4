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

// conversationShape builds a growing conversation's agent requests in
// one dialect: its path and the body of call i.
type conversationShape struct {
	path string
	body func(i int) []byte
}

// growingChat is BenchmarkGatewayGrowing's conversation in Chat
// Completions.
func growingChat() conversationShape {
	msgs := []any{map[string]any{"role": "system", "content": strings.Repeat("You are a careful coding agent. ", 60)}}
	return conversationShape{path: "/v1/chat/completions", body: func(i int) []byte {
		if i > 0 {
			msgs = append(msgs, map[string]any{"role": "assistant", "content": "MOCK-REPLY: " + growingText(i-1)})
		}
		msgs = append(msgs, user(growingText(i)))
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "tools": addTools, "temperature": 0.6, "max_tokens": 4096})
		return body
	}}
}

// growingAnthropic is the same conversation as Claude Code sends it in
// Anthropic Messages: the system prompt as a block, every text in a
// block, and the cache_control marker on the last message only (it moves
// every turn, so no request's bytes are a prefix of the next's).
func growingAnthropic() conversationShape {
	mark := map[string]any{"type": "ephemeral"}
	system := []any{map[string]any{"type": "text", "text": strings.Repeat("You are a careful coding agent. ", 60), "cache_control": mark}}
	var msgs []map[string]any
	return conversationShape{path: "/v1/messages", body: func(i int) []byte {
		if i > 0 {
			delete(msgs[len(msgs)-1]["content"].([]any)[0].(map[string]any), "cache_control")
			msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "MOCK-REPLY: " + growingText(i-1)}}})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": growingText(i), "cache_control": mark}}})
		body, _ := json.Marshal(map[string]any{"model": "claude-sonnet", "system": system, "messages": msgs, "tools": claudeTools, "max_tokens": 4096, "stream": false})
		return body
	}}
}

// growingText is the user's message of call i of a growing conversation.
func growingText(i int) string {
	return fmt.Sprintf("step %d: look at the code and fix what is wrong", i)
}

// growingAgentBodies returns the agent's requests of a growing
// conversation of the given shape and the fake engine's answers to them,
// recorded through a gateway.
func growingAgentBodies(b *testing.B, calls int, shape conversationShape) (agent, answers [][]byte) {
	llm := engine(b, fakellm.Options{})
	rec := &recorder{next: &http.Transport{}}
	g := startGateway(b, llm.URL(), Options{HTTPClient: &http.Client{Transport: rec}})
	for i := range calls {
		body := shape.body(i)
		if status, out := g.post(b, shape.path, g.bearer(), body); status != http.StatusOK {
			b.Fatalf("call %d: status %d: %s", i+1, status, out)
		}
		agent = append(agent, body)
	}
	ex, err := g.Export()
	if err != nil {
		b.Fatal(err)
	}
	if len(ex.Chains) != 1 || len(ex.Chains[0].Calls) != calls {
		b.Fatalf("the conversation is not one chain of %d calls: %d chains", calls, len(ex.Chains))
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
	benchInMemory(b, "Chat Completions", growingChat)
}

// BenchmarkGatewayGrowingAnthropicInMemory is the same conversation as
// Claude Code sends it (Anthropic Messages, its cache_control marker
// moving every turn).
func BenchmarkGatewayGrowingAnthropicInMemory(b *testing.B) {
	benchInMemory(b, "Anthropic Messages", growingAnthropic)
}

// benchInMemory runs BenchmarkGatewayGrowingInMemory on a conversation of
// shape.
func benchInMemory(b *testing.B, name string, shape func() conversationShape) {
	agent, answers := growingAgentBodies(b, growingCalls, shape())
	path := shape().path
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
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
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
	fmt.Printf("\nBENCH gateway handler in memory (no sockets, the engine's answers recorded), a growing %s conversation of %d calls: per call p50 %s µs at calls 1–%d, %s µs at the last %d: last/first %s (the bytes read and written grow 20×); 3 conversations\n",
		name, growingCalls, fs.Format("%.0f"), growingWindow, ls.Format("%.0f"), growingWindow, rs.Format("%.2f"))
}
