package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// TestPassthrough: a hosted provider of the agent's dialect gets the
// request with the real key in the dialect's place (and never the agent's),
// the answer comes back as the provider wrote it, and the call is recorded
// as evaluation traffic without token ids.
func TestPassthrough(t *testing.T) {
	cases := []struct {
		dialect Dialect
		path    string
		headers func(gw *testGateway) map[string]string
		body    any
		keyAt   string // the header the real key must arrive in
		want    string // in the answer
	}{
		{DialectAnthropic, "/v1/messages", (*testGateway).anthropicHeaders,
			map[string]any{"model": "claude", "max_tokens": 100, "stream": true, "messages": []any{user("hi")}},
			"X-Api-Key", "message_stop"},
		{DialectChat, "/v1/chat/completions", (*testGateway).bearer,
			map[string]any{"model": "gpt", "messages": []any{user("hi")}}, "Authorization", "MOCK-AUX"},
		{DialectGemini, "/v1beta/models/gemini-pro:generateContent", nil,
			map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}}},
			"X-Goog-Api-Key", "MOCK-AUX"},
	}
	for _, c := range cases {
		t.Run(string(c.dialect), func(t *testing.T) {
			provider := fakellm.New(fakellm.Options{})
			if _, err := provider.Start(""); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { provider.Close() })
			gw := startGateway(t, "", Options{Upstream: Upstream{Kind: UpstreamPassthrough, URL: provider.URL(), Dialect: c.dialect}})
			path, headers := c.path, map[string]string(nil)
			if c.headers != nil {
				headers = c.headers(gw)
			} else {
				path += "?key=" + gw.Key() // Gemini's query key
			}
			status, body := gw.post(t, path, headers, c.body)
			if status != 200 || !strings.Contains(string(body), c.want) {
				t.Fatalf("status %d: %s", status, body)
			}
			es := provider.Requests()
			if len(es) != 1 {
				t.Fatalf("%d provider requests", len(es))
			}
			got := es[0].Headers[c.keyAt]
			if !strings.Contains(got, realKey) {
				t.Errorf("%s = %q, want the real key", c.keyAt, got)
			}
			for k, v := range es[0].Headers {
				if strings.Contains(v, gw.Key()) {
					t.Errorf("the agent's key reached the provider in %s", k)
				}
			}
			if strings.Contains(es[0].Query, gw.Key()) {
				t.Errorf("the agent's key reached the provider in the query %q", es[0].Query)
			}
			r := gw.events.responses()[1]
			if r == nil || r.Traffic != TrafficEvaluation || r.PromptTokenIDs != nil || r.Content == nil || r.Error != "" {
				t.Fatalf("llm_response %+v", r)
			}
			if u := r.Usage; u == nil || u.CompletionTokens == 0 {
				t.Errorf("usage %+v", r.Usage)
			}
			if _, err := gw.Export(); !errors.Is(err, ErrEvaluationTraffic) {
				t.Errorf("Export of evaluation traffic: %v", err)
			}
			// Another dialect is refused in its own shape.
			status, body = gw.post(t, "/v1/responses", gw.bearer(), map[string]any{"input": "hi", "stream": false})
			var e struct{ Error struct{ Message string } }
			if status != 400 || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error.Message, string(c.dialect)) {
				t.Errorf("other dialect: %d %s", status, body)
			}
			req := gw.events.list()[0]
			if req.Type != wire.EventLLMRequest || req.Origin != wire.OriginGateway {
				t.Errorf("first event %v", req)
			}
		})
	}
}

// TestPassthroughNeedsDialect: a passthrough without a dialect is a
// configuration error.
func TestPassthroughNeedsDialect(t *testing.T) {
	if _, err := New(Options{Upstream: Upstream{Kind: UpstreamPassthrough, URL: "http://127.0.0.1:1"}}); err == nil {
		t.Fatal("no error")
	}
	if _, err := New(Options{Upstream: Upstream{Kind: "magic", URL: "http://127.0.0.1:1"}}); err == nil {
		t.Fatal("no error for an unknown kind")
	}
	if _, err := New(Options{Upstream: Upstream{URL: "ftp://x"}}); err == nil {
		t.Fatal("no error for a non-http URL")
	}
	if _, err := New(Options{Key: "same", Upstream: Upstream{URL: "http://x", APIKey: "same"}}); err == nil {
		t.Fatal("no error when the agent's key is the real one")
	}
}
