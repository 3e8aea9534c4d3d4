package gateway

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// dialectCase is one agent dialect's request and error shape.
type dialectCase struct {
	name    string
	path    string
	headers func(gw *testGateway) map[string]string
	body    any
	// errType reads the error's type (or code) from an error body, "" if
	// the body is not the dialect's error shape.
	errType func(body []byte) string
}

func dialectCases() []dialectCase {
	msgs := []any{user("hi")}
	openAI := func(b []byte) string {
		var e struct {
			Error *struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Message == "" {
			return ""
		}
		return e.Error.Type
	}
	return []dialectCase{
		{"chat", "/v1/chat/completions", (*testGateway).bearer, map[string]any{"model": "m", "messages": msgs}, openAI},
		{"anthropic", "/v1/messages", (*testGateway).anthropicHeaders, map[string]any{"model": "m", "messages": msgs, "max_tokens": 100},
			func(b []byte) string {
				var e struct {
					Type  string `json:"type"`
					Error *struct {
						Type    string `json:"type"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if json.Unmarshal(b, &e) != nil || e.Type != "error" || e.Error == nil || e.Error.Message == "" {
					return ""
				}
				return e.Error.Type
			}},
		{"responses", "/v1/responses", (*testGateway).bearer, map[string]any{"model": "m", "input": "hi"}, openAI},
		{"gemini", "/v1beta/models/gemini-pro:generateContent", (*testGateway).geminiHeaders,
			map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}}},
			func(b []byte) string {
				var e struct {
					Error *struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
						Status  string `json:"status"`
					} `json:"error"`
				}
				if json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Message == "" || e.Error.Code == 0 {
					return ""
				}
				return e.Error.Status
			}},
	}
}

// closedPort returns the base URL of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// TestUpstreamFailures: an upstream that is down, slow, failing or
// answering garbage gives every dialect a retryable error in its shape, and
// the call is recorded as failed.
func TestUpstreamFailures(t *testing.T) {
	type want struct{ chat, anthropic int }
	slow := engine(t, fakellm.Options{Script: mustScript(t, `{"rules":[{"reply":{"delay":"30s"}}]}`)})
	cases := []struct {
		name     string
		upstream func(t *testing.T) string
		opts     Options
		want     want
	}{
		{"down", closedPort, Options{}, want{503, 529}},
		{"slow", func(*testing.T) string { return slow.URL() }, Options{Upstream: Upstream{Timeout: 200 * time.Millisecond}}, want{504, 529}},
		{"garbage", func(t *testing.T) string { return serveFixed(t, 200, `{"choices": [nope`) }, Options{}, want{502, 502}},
		{"no choices", func(t *testing.T) string { return serveFixed(t, 200, `{"choices": []}`) }, Options{}, want{502, 502}},
		{"server error", func(t *testing.T) string { return serveFixed(t, 500, `{"error":{"message":"boom"}}`) }, Options{}, want{502, 502}},
		{"too big", func(t *testing.T) string { return serveFixed(t, 200, `{"x":"`+strings.Repeat("a", 4096)+`"}`) },
			Options{MaxResponseBody: 1024}, want{502, 502}},
		{"overloaded", func(t *testing.T) string { return serveFixed(t, 429, `{"error":{"message":"slow down"}}`) }, Options{}, want{429, 429}},
		{"refused", func(t *testing.T) string { return serveFixed(t, 400, `{"error":{"message":"context too long"}}`) }, Options{}, want{400, 400}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gw := startGateway(t, c.upstream(t), c.opts)
			for _, d := range dialectCases() {
				status, body := gw.post(t, d.path, d.headers(gw), d.body)
				w := c.want.chat
				if d.name == "anthropic" {
					w = c.want.anthropic
				}
				if status != w || d.errType(body) == "" {
					t.Errorf("%s: %d %s, want %d in the dialect's shape", d.name, status, body, w)
				}
			}
			ex, _ := gw.Export()
			if len(ex.Calls) != len(dialectCases()) || ex.Calls[0].Error == "" || !hasIssue(ex.Issues, IssueCallFailed, SeverityWarn) || len(ex.Chains) != 0 {
				t.Errorf("failed calls not recorded: %+v", ex)
			}
			if r := gw.events.responses()[1]; r == nil || r.Error == "" || r.Status == 0 {
				t.Errorf("llm_response of a failed call: %+v", r)
			}
		})
	}
}

// TestBadAgentRequests: malformed requests, oversized bodies, unknown
// routes and methods get the dialect's error shape and reach nothing.
func TestBadAgentRequests(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{MaxRequestBody: 4096})
	for _, d := range dialectCases() {
		for _, c := range []struct {
			name   string
			body   string
			status int
		}{
			{"not json", `{"messages": [`, 400},
			{"array", `[1,2]`, 400},
			{"messages not a list", `{"messages": "hi"}`, 400},
			{"no messages", `{"model": "m"}`, 400},
			{"too big", `{"messages": [{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413},
		} {
			status, body := gw.post(t, d.path, d.headers(gw), c.body)
			if status != c.status || d.errType(body) == "" {
				t.Errorf("%s %s: %d %s", d.name, c.name, status, body)
			}
		}
	}
	if status, body := gw.post(t, "/v1/embeddings", gw.bearer(), `{"input":"x"}`); status != 404 || dialectCases()[0].errType(body) == "" {
		t.Errorf("unknown route: %d %s", status, body)
	}
	req, _ := newRequest("GET", gw.base+"/v1/chat/completions", gw.bearer())
	resp, err := gw.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET on chat: %d", resp.StatusCode)
	}
	// Nothing reached the engine or was recorded as a call; the unknown
	// route was recorded as a refusal.
	evs := gw.events.list()
	if n := len(llm.Requests()); n != 0 || len(evs) != 1 || evs[0].Type != wire.EventError {
		t.Errorf("bad requests reached the engine (%d) or were recorded: %v", n, evs)
	}
	// A chat request on a path no dialect defines is not taken by its
	// shape: it gets 404 and never reaches the engine.
	if status, body := gw.post(t, "/custom/generate", gw.bearer(), map[string]any{"messages": []any{user("hi")}}); status != 404 || dialectCases()[0].errType(body) == "" {
		t.Errorf("chat body on an unknown path: %d %s", status, body)
	}
	if n := len(llm.Requests()); n != 0 {
		t.Errorf("a request on an unknown path reached the engine (%d)", n)
	}
}

func mustScript(t *testing.T, js string) *fakellm.Script {
	t.Helper()
	sc, err := fakellm.ParseScript([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
