package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

func (g *testGateway) geminiHeaders() map[string]string {
	return map[string]string{"X-Goog-Api-Key": g.Key()}
}

// checkEngineIDs asserts every captured call's prompt and completion ids
// are what the engine computed from what it was sent, and that the calls
// form one chain.
func checkEngineIDs(t *testing.T, llm *fakellm.Server, gw *testGateway, calls int) {
	t.Helper()
	res := gw.events.responses()
	es := llm.Requests()
	if len(es) != calls {
		t.Fatalf("%d upstream calls, want %d", len(es), calls)
	}
	for i, e := range es {
		var up struct {
			Tools    json.RawMessage         `json:"tools"`
			Messages []fakellm.EngineMessage `json:"messages"`
		}
		json.Unmarshal(e.Body, &up)
		var cs [][2]string
		for _, rc := range e.ReplyCalls {
			name, args, _ := cut(rc, " ")
			cs = append(cs, [2]string{name, args})
		}
		prompt := fakellm.EngineTokenize(fakellm.EngineRenderPrompt(up.Tools, up.Messages))
		completion := fakellm.EngineTokenize(fakellm.EngineRenderCompletion(e.ReplyText, cs))
		r := res[i+1]
		if r == nil || !equalInts(r.PromptTokenIDs, prompt) || !equalInts(r.CompletionTokenIDs, completion) {
			t.Errorf("call %d: captured ids differ from the engine's", i+1)
		}
	}
	ex, _ := gw.Export()
	if len(ex.Chains) != 1 || len(ex.Chains[0].Calls) != calls {
		t.Errorf("want one chain of %d calls: %+v", calls, ex.Calls)
	}
}

var codexTools = []any{map[string]any{"type": "function", "name": "add", "description": "adds",
	"parameters": map[string]any{"type": "object"}}, map[string]any{"type": "web_search"}}

// TestResponses: Codex's dialect, streamed and not, through a tool round trip.
func TestResponses(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			llm := engine(t, fakellm.Options{})
			gw := startGateway(t, llm.URL(), Options{})
			input := []any{
				map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "be brief"}}},
				map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": `call add {"a":2,"b":3}`}}},
			}
			send := func() []map[string]any {
				status, body := gw.post(t, "/v1/responses", gw.bearer(), map[string]any{"model": "gpt-5", "instructions": "You are Codex.",
					"input": input, "tools": codexTools, "tool_choice": "auto", "stream": stream, "max_output_tokens": 500})
				if status != 200 {
					t.Fatalf("status %d: %s", status, body)
				}
				var resp struct {
					Status string           `json:"status"`
					Output []map[string]any `json:"output"`
					Usage  struct {
						OutputTokens int `json:"output_tokens"`
					} `json:"usage"`
				}
				if !stream {
					if err := json.Unmarshal(body, &resp); err != nil {
						t.Fatal(err)
					}
					return resp.Output
				}
				evs := parseSSE(t, body)
				var types []string
				var done []map[string]any
				var text, args string
				for i, ev := range evs {
					var d map[string]any
					if err := json.Unmarshal([]byte(ev.Data), &d); err != nil || d["type"] != ev.Event || d["sequence_number"] != float64(i) {
						t.Fatalf("event %d: %s %s", i, ev.Event, ev.Data)
					}
					types = append(types, ev.Event)
					switch ev.Event {
					case "response.output_text.delta":
						text += d["delta"].(string)
					case "response.function_call_arguments.delta":
						args += d["delta"].(string)
					case "response.output_item.done":
						done = append(done, d["item"].(map[string]any))
					case "response.completed":
						b, _ := json.Marshal(d["response"])
						json.Unmarshal(b, &resp)
					}
				}
				if types[0] != "response.created" || types[1] != "response.in_progress" || types[len(types)-1] != "response.completed" {
					t.Fatalf("lifecycle %v", types)
				}
				for _, it := range done {
					if it["type"] == "function_call" && it["arguments"] != args {
						t.Errorf("argument deltas %q, item %q", args, it["arguments"])
					}
					if it["type"] == "message" && !strings.Contains(string(mustJSON(it)), text) {
						t.Errorf("text deltas %q, item %v", text, it)
					}
				}
				if len(done) != len(resp.Output) {
					t.Errorf("%d items done, %d in the completed response", len(done), len(resp.Output))
				}
				return resp.Output
			}
			out := send()
			if len(out) != 1 || out[0]["type"] != "function_call" || out[0]["name"] != "add" || out[0]["arguments"] != `{"a":2,"b":3}` {
				t.Fatalf("first output %v", out)
			}
			input = append(input, out[0], map[string]any{"type": "function_call_output", "call_id": out[0]["call_id"], "output": "5"})
			out = send()
			if len(out) != 1 || out[0]["type"] != "message" || !strings.Contains(string(mustJSON(out[0])), "MOCK-DONE: 5") {
				t.Fatalf("second output %v", out)
			}
			checkEngineIDs(t, llm, gw, 2)
			var up struct {
				Messages []struct{ Role string } `json:"messages"`
				Tools    []any                   `json:"tools"`
			}
			json.Unmarshal(llm.Requests()[0].Body, &up)
			if len(up.Messages) != 3 || up.Messages[0].Role != "system" || up.Messages[1].Role != "system" || len(up.Tools) != 1 {
				t.Errorf("translated request %s", llm.Requests()[0].Body)
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

var geminiCLITools = []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "add", "description": "adds",
	"parametersJsonSchema": map[string]any{"type": "object"}}}}}

// TestGemini: Gemini CLI's dialect, non-streamed, streamed as SSE and as a
// JSON array, through a tool round trip; the method matches in any case.
func TestGemini(t *testing.T) {
	for _, mode := range []string{"json", "sse", "array"} {
		t.Run(mode, func(t *testing.T) {
			llm := engine(t, fakellm.Options{})
			gw := startGateway(t, llm.URL(), Options{})
			path := "/v1beta/models/gemini-2.5-pro:generateContent"
			switch mode {
			case "sse":
				path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
			case "array":
				path = "/v1beta/models/gemini-2.5-pro:STREAMGENERATECONTENT"
			}
			contents := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": `call add {"a":2,"b":3}`}}}}
			send := func() []map[string]any {
				status, body := gw.post(t, path, gw.geminiHeaders(), map[string]any{"contents": contents, "tools": geminiCLITools,
					"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "You are Gemini CLI."}}},
					"generationConfig":  map[string]any{"temperature": 0, "maxOutputTokens": 300}})
				if status != 200 {
					t.Fatalf("status %d: %s", status, body)
				}
				type chunk struct {
					Candidates []struct {
						Content struct {
							Parts []map[string]any `json:"parts"`
						} `json:"content"`
						FinishReason string `json:"finishReason"`
					} `json:"candidates"`
					UsageMetadata *struct {
						CandidatesTokenCount int `json:"candidatesTokenCount"`
					} `json:"usageMetadata"`
				}
				var chunks []chunk
				switch mode {
				case "json":
					var c chunk
					json.Unmarshal(body, &c)
					chunks = append(chunks, c)
				case "array":
					if err := json.Unmarshal(body, &chunks); err != nil {
						t.Fatalf("not a JSON array: %s", body)
					}
				case "sse":
					for _, ev := range parseSSE(t, body) {
						var c chunk
						if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
							t.Fatal(err)
						}
						chunks = append(chunks, c)
					}
				}
				last := chunks[len(chunks)-1]
				if last.Candidates[0].FinishReason != "STOP" || last.UsageMetadata == nil {
					t.Fatalf("last chunk %+v", last)
				}
				var parts []map[string]any
				text := ""
				for _, c := range chunks {
					for _, p := range c.Candidates[0].Content.Parts {
						if s, ok := p["text"].(string); ok {
							text += s
						} else {
							parts = append(parts, p)
						}
					}
				}
				if text != "" {
					parts = append(parts, map[string]any{"text": text})
				}
				return parts
			}
			parts := send()
			if len(parts) != 1 || parts[0]["functionCall"] == nil {
				t.Fatalf("first answer %v", parts)
			}
			fc := parts[0]["functionCall"].(map[string]any)
			contents = append(contents,
				map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": fc}}},
				map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": fc["name"],
					"response": map[string]any{"output": "5"}}}}})
			parts = send()
			if len(parts) != 1 || parts[0]["text"] != "MOCK-DONE: 5" {
				t.Fatalf("second answer %v", parts)
			}
			checkEngineIDs(t, llm, gw, 2)
		})
	}
}

// TestGeminiCountTokens is answered locally.
func TestGeminiCountTokens(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	status, body := gw.post(t, "/v1beta/models/gemini-pro:countTokens", gw.geminiHeaders(),
		map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hello"}}}}})
	var n struct {
		TotalTokens int `json:"totalTokens"`
	}
	if status != 200 || json.Unmarshal(body, &n) != nil || n.TotalTokens < 1 {
		t.Fatalf("countTokens: %d %s", status, body)
	}
	if len(llm.Requests()) != 0 || len(gw.events.list()) != 0 {
		t.Fatalf("countTokens was forwarded or recorded")
	}
}
