package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/wire"
)

// upstreamLog is a real HTTP server on 127.0.0.1 standing for a
// LiteLLM-style provider: it answers every request with 200 and logs each
// one it receives, whatever its path.
type upstreamLog struct {
	srv     *httptest.Server
	mu      sync.Mutex
	entries []upstreamEntry
}

type upstreamEntry struct {
	method, uri string
	header      http.Header
}

func startUpstreamLog(t *testing.T) *upstreamLog {
	u := &upstreamLog{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.entries = append(u.entries, upstreamEntry{r.Method, r.RequestURI, r.Header.Clone()})
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","admin":"granted","usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstreamLog) list() []upstreamEntry {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamEntry(nil), u.entries...)
}

// rawRequest sends one request with target written into the request line
// exactly as given (no client-side cleaning or escaping), and returns the
// status and body of the answer.
func rawRequest(t *testing.T, base, method, target string, headers map[string]string, body []byte) (int, []byte) {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, target, addr, len(body))
	for k, v := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	if _, err := conn.Write(append([]byte(b.String()), body...)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// attackTargets are request targets an agent holding the gateway's key
// might use to reach a passthrough provider beyond its model routes: admin
// routes, dot segments, encoded separators and queries, double and
// trailing slashes, a prefix before a model route, other API routes,
// hostile Gemini model names, an absolute-form target.
var attackTargets = []string{
	"/key/generate?team_id=admin",
	"/key/generate",
	"/v1/../../admin/delete",
	"/v1/chat/completions/../../key/generate",
	"/v1/chat/completions%3Fteam_id=admin",
	"/v1/messages%3Fbeta=true",
	"/v1%2Fchat%2Fcompletions",
	"/v1/chat%2fcompletions",
	"/v1/%2e%2e/key/generate",
	"//v1/chat/completions",
	"/v1//chat/completions",
	"/v1/chat/completions/",
	"/v1/./chat/completions",
	"/admin/v1/chat/completions",
	"/key/generate/v1/messages",
	"/key/generate/v1/responses",
	"/v1/messages/batches",
	"/v1/embeddings",
	"/v1/files",
	"/v1beta/models/..%2F..%2Fkey:generateContent",
	"/v1beta/models/x/../../../key/generate:generateContent",
	"/v1beta/models/.hidden:generateContent",
	"/v1beta/models/a/b:generateContent",
	"/v1beta/models/m:embedContent",
	"/v1beta/models/m:generateContent;team_id=admin",
	"/v1beta/models/m:generateContent:x",
	`/v1\..\key\generate`,
	"/v1/chat/completions#frag",
	"http://evil.example/key/generate?team_id=admin",
}

// TestPassthroughOnlyModelRoutes: with a passthrough upstream, an agent
// presenting the gateway's key gets 404 in its dialect's shape for every
// target that is not one of its dialect's model routes, each refusal is
// recorded as an error event and counted, and the upstream's log shows
// that nothing arrived. The positive control: the dialect's own model
// route, with hostile query parameters added, arrives upstream with the
// real key, at the provider's root + the route's path, with only the
// query parameters the dialect uses.
func TestPassthroughOnlyModelRoutes(t *testing.T) {
	gemini := map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}}}
	cases := []struct {
		dialect Dialect
		headers func(gw *testGateway) map[string]string
		body    any
		target  string // the control: a model route with hostile parameters
		arrives string // what the upstream must see of it
		keyAt   string
	}{
		{DialectChat, (*testGateway).bearer, map[string]any{"model": "m", "messages": []any{user("hi")}},
			"/v1/chat/completions?team_id=admin&key=K", "/root/v1/chat/completions", "Authorization"},
		{DialectResponses, (*testGateway).bearer, map[string]any{"model": "m", "input": "hi"},
			"/v1/responses?team_id=admin", "/root/v1/responses", "Authorization"},
		{DialectAnthropic, (*testGateway).anthropicHeaders, map[string]any{"model": "m", "max_tokens": 10, "messages": []any{user("hi")}},
			"/v1/messages?beta=true&team_id=admin", "/root/v1/messages?beta=true", "X-Api-Key"},
		{DialectGemini, (*testGateway).geminiHeaders, gemini,
			"/v1beta/models/gemini-pro:STREAMGENERATECONTENT?alt=sse&team_id=admin&key=K",
			"/root/v1beta/models/gemini-pro:streamGenerateContent?alt=sse", "X-Goog-Api-Key"},
	}
	for _, c := range cases {
		t.Run(string(c.dialect), func(t *testing.T) {
			up := startUpstreamLog(t)
			gw := startGateway(t, "", Options{Upstream: Upstream{Kind: UpstreamPassthrough, URL: up.srv.URL + "/root", Dialect: c.dialect}})
			headers := c.headers(gw)
			body, _ := json.Marshal(c.body)
			before := map[string]uint64{}
			for _, r := range RefusalReasons {
				before[r] = RefusedRequests(r)
			}
			for _, target := range attackTargets {
				status, answer := rawRequest(t, gw.base, http.MethodPost, target, headers, body)
				var shape map[string]json.RawMessage
				if status != http.StatusNotFound || json.Unmarshal(answer, &shape) != nil || shape["error"] == nil {
					t.Errorf("POST %s: %d %s, want 404 in an error shape", target, status, answer)
				}
			}
			for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
				if status, answer := rawRequest(t, gw.base, m, "/key/info?key_alias=x", headers, nil); status != http.StatusNotFound {
					t.Errorf("%s /key/info: %d %s", m, status, answer)
				}
			}
			// A model route with the wrong method is not forwarded either.
			if status, _ := rawRequest(t, gw.base, http.MethodDelete, "/v1/chat/completions", headers, nil); status != http.StatusMethodNotAllowed {
				t.Errorf("DELETE on a model route: %d", status)
			}
			if es := up.list(); len(es) != 0 {
				t.Fatalf("the upstream received %d requests, first %s %s", len(es), es[0].method, es[0].uri)
			}
			refusals := len(attackTargets) + 3
			var n uint64
			for _, r := range RefusalReasons {
				n += RefusedRequests(r) - before[r]
			}
			if n != uint64(refusals) {
				t.Errorf("RefusedRequests counted %d refusals, want %d", n, refusals)
			}
			recorded := 0
			for _, e := range gw.events.list() {
				if p, ok := e.Data.(*wire.Error); ok && e.Origin == wire.OriginGateway && p.Extra["refused_request"] != nil {
					recorded++
					if b, _ := json.Marshal(p); strings.Contains(string(b), gw.Key()) {
						t.Errorf("a refusal records the agent's key: %s", b)
					}
				}
			}
			if recorded != refusals {
				t.Errorf("%d refusals recorded as events, want %d", recorded, refusals)
			}

			// The control: the dialect's own route goes through.
			status, answer := rawRequest(t, gw.base, http.MethodPost, c.target, headers, body)
			if status != http.StatusOK || !strings.Contains(string(answer), "granted") {
				t.Fatalf("model route %s: %d %s", c.target, status, answer)
			}
			es := up.list()
			if len(es) != 1 || es[0].method != http.MethodPost || es[0].uri != c.arrives {
				t.Fatalf("upstream log %+v, want one POST %s", es, c.arrives)
			}
			if got := es[0].header.Get(c.keyAt); !strings.Contains(got, realKey) {
				t.Errorf("%s = %q upstream, want the real key", c.keyAt, got)
			}
			for k, vs := range es[0].header {
				if strings.Contains(strings.Join(vs, " "), gw.Key()) {
					t.Errorf("the agent's key reached the upstream in %s", k)
				}
			}
		})
	}
}

// TestEngineOnlyModelRoutes: with an engine upstream, the same targets get
// 404 and the engine sees none of them; the real routes are served.
func TestEngineOnlyModelRoutes(t *testing.T) {
	up := startUpstreamLog(t)
	gw := startGateway(t, up.srv.URL, Options{})
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{user("hi")}})
	for _, target := range attackTargets {
		if status, answer := rawRequest(t, gw.base, http.MethodPost, target, gw.bearer(), body); status != http.StatusNotFound {
			t.Errorf("POST %s: %d %s", target, status, answer)
		}
	}
	if es := up.list(); len(es) != 0 {
		t.Fatalf("the engine received %d requests, first %s %s", len(es), es[0].method, es[0].uri)
	}
	// The control: the engine is called (its answer here is not a chat
	// answer, so the agent gets 502, but the request arrived).
	rawRequest(t, gw.base, http.MethodPost, "/v1/chat/completions", gw.bearer(), body)
	if es := up.list(); len(es) != 1 || es[0].uri != "/v1/chat/completions" {
		t.Fatalf("engine log %+v, want one call", es)
	}
}
