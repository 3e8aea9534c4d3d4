package gateway

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// keyCatcher is a server standing for a third party: it records the
// credential headers of every request it gets and answers a model reply.
type keyCatcher struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newKeyCatcher(t *testing.T) *keyCatcher {
	t.Helper()
	k := &keyCatcher{}
	k.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.seen = append(k.seen, r.Header.Clone())
		k.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"msg_x","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"FROM-THE-THIRD-PARTY"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1},` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"FROM-THE-THIRD-PARTY"},"finish_reason":"stop"}]}`))
	}))
	t.Cleanup(k.Close)
	return k
}

// keys returns every credential header value the catcher received.
func (k *keyCatcher) keys() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, h := range k.seen {
		for _, name := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
			if v := h.Get(name); v != "" {
				out = append(out, name+": "+v)
			}
		}
	}
	return out
}

// redirector is an upstream that answers every call with 307 to target
// (307 keeps the method and the body, as 308 does).
func redirector(t *testing.T, target string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestUpstreamRedirectDoesNotCarryTheRealKey (red team 6): the gateway's
// default upstream client (sharedClient) follows redirects. A passthrough
// or engine upstream that answers 307/308 makes the daemon re-send the
// agent's request body, with the real key, to wherever Location points:
//
//   - Anthropic (x-api-key) and Gemini (x-goog-api-key) dialects: net/http
//     strips only Authorization/Cookie on a cross-host redirect, so the
//     real key reaches ANOTHER host (here "localhost" vs "127.0.0.1");
//   - engine/OpenAI (Authorization): kept on a redirect to the same host
//     name on another port (here 127.0.0.1:other), e.g. a daemon listener;
//
// and the third party's answer is what the agent gets (200). The gateway
// should not follow upstream redirects at all (CheckRedirect:
// ErrUseLastResponse): an API upstream never legitimately redirects a POST.
// The positive control shows the same call without a redirect carries the
// key to the upstream itself.
func TestUpstreamRedirectDoesNotCarryTheRealKey(t *testing.T) {
	t.Cleanup(sharedClient.Transport.(*http.Transport).CloseIdleConnections)
	body := map[string]any{"model": "claude", "max_tokens": 10, "messages": []any{user("hi")}}

	t.Run("control: no redirect, the upstream itself gets the key", func(t *testing.T) {
		up := newKeyCatcher(t)
		gw := startGateway(t, "", Options{HTTPClient: sharedClient,
			Upstream: Upstream{Kind: UpstreamPassthrough, URL: up.URL, Dialect: DialectAnthropic}})
		status, out := gw.post(t, "/v1/messages", gw.anthropicHeaders(), body)
		if status != 200 || len(up.keys()) != 1 || !strings.Contains(up.keys()[0], realKey) {
			t.Fatalf("control: status %d %s, keys at the upstream %q", status, out, up.keys())
		}
	})

	t.Run("anthropic passthrough, redirect to another host", func(t *testing.T) {
		third := newKeyCatcher(t)
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(third.URL, "http://"))
		up := redirector(t, "http://localhost:"+port)
		gw := startGateway(t, "", Options{HTTPClient: sharedClient,
			Upstream: Upstream{Kind: UpstreamPassthrough, URL: up.URL, Dialect: DialectAnthropic}})
		status, out := gw.post(t, "/v1/messages", gw.anthropicHeaders(), body)
		if got := third.keys(); len(got) > 0 {
			t.Errorf("the real key reached a third host through an upstream redirect: %q (agent got %d %s)", got, status, out)
		}
		if strings.Contains(string(out), "FROM-THE-THIRD-PARTY") {
			t.Errorf("the agent got the third party's answer: %d %s", status, out)
		}
	})

	t.Run("engine, redirect to another port of the same host", func(t *testing.T) {
		third := newKeyCatcher(t)
		up := redirector(t, third.URL)
		gw := startGateway(t, "", Options{HTTPClient: sharedClient,
			Upstream: Upstream{URL: up.URL + "/v1"}})
		status, out := gw.post(t, "/v1/chat/completions", gw.bearer(),
			map[string]any{"model": "m", "messages": []any{user("hi")}})
		if got := third.keys(); len(got) > 0 {
			t.Errorf("the real key followed an engine redirect to %s: %q (agent got %d %s)", third.URL, got, status, out)
		}
	})
}
