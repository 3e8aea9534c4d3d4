package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

var addTools = []any{map[string]any{"type": "function", "function": map[string]any{
	"name": "add", "description": "adds", "parameters": map[string]any{"type": "object"}}}}

// chatAnswer is what an agent reads of a non-streamed chat answer.
type chatAnswer struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage tokenUsage `json:"usage"`
}

// TestChatCapturesEngineIDs: an agent's two non-streamed calls (a tool call,
// then the answer to its result) reach the engine with the real key and the
// injections, and the events carry exactly the engine's ids and logprobs,
// stamped with the turn and call index.
func TestChatCapturesEngineIDs(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{Upstream: Upstream{Model: "policy"}})
	gw.SetTurn(3)

	msgs := []any{map[string]any{"role": "user", "content": `call add {"a":2,"b":3}`}}
	status, body := gw.post(t, "/v1/chat/completions", gw.bearer(), map[string]any{
		"model": "agent-model", "messages": msgs, "tools": addTools, "temperature": 0.7})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var a chatAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	if a.Model != "agent-model" || a.Choices[0].FinishReason != "tool_calls" || len(a.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("answer %s", body)
	}
	if strings.Contains(string(body), "token_ids") || strings.Contains(string(body), "logprob\":-") {
		t.Errorf("the agent got the engine's token fields: %s", body)
	}
	tc := a.Choices[0].Message.ToolCalls[0]
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Function.Name, "arguments": tc.Function.Arguments}}}},
		map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": "5"})
	status, body = gw.post(t, "/v1/chat/completions", gw.bearer(), map[string]any{
		"model": "agent-model", "messages": msgs, "tools": addTools})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	json.Unmarshal(body, &a)
	if got := *a.Choices[0].Message.Content; got != "MOCK-DONE: 5" {
		t.Fatalf("second answer %q", got)
	}

	// Upstream saw the real key, the injections and the model override.
	for _, e := range llm.Requests() {
		if e.Headers["Authorization"] != "Bearer "+realKey {
			t.Errorf("upstream auth %q", e.Headers["Authorization"])
		}
		var up map[string]any
		json.Unmarshal(e.Body, &up)
		if up["return_token_ids"] != true || up["logprobs"] != true || up["stream"] != false || up["model"] != "policy" {
			t.Errorf("upstream body lacks the injections: %s", e.Body)
		}
	}

	evs := gw.events.list()
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), realKey) || strings.Contains(string(b), gw.Key()) {
			t.Errorf("a key is in an event: %s", b)
		}
	}
	ex, err := gw.Export()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(ex); strings.Contains(string(b), realKey) || strings.Contains(string(b), gw.Key()) {
		t.Errorf("a key is in the export")
	}
	if len(evs) != 4 {
		t.Fatalf("want 4 events, got %d", len(evs))
	}
	for i, ev := range evs {
		want := wire.EventLLMRequest
		if i%2 == 1 {
			want = wire.EventLLMResponse
		}
		if ev.Type != want || ev.Origin != wire.OriginGateway || ev.Turn != 3 {
			t.Errorf("event %d: %v", i, ev)
		}
	}
	req1 := evs[0].Data.(*wire.LLMRequest)
	if req1.CallIndex != 1 || req1.Dialect != "openai-chat" || req1.Model != "agent-model" ||
		!strings.Contains(string(req1.Sampling), `"temperature":0.7`) ||
		!strings.Contains(string(req1.EffectiveSampling), `"return_token_ids":true`) {
		t.Errorf("llm_request %+v", req1)
	}
	res := gw.events.responses()
	p1, c1 := engineIDs(t, addTools, msgs[:1], "", [][2]string{{"add", tc.Function.Arguments}})
	p2, c2 := engineIDs(t, addTools, msgs, "MOCK-DONE: 5", nil)
	for i, want := range [][2][]int{{p1, c1}, {p2, c2}} {
		r := res[i+1]
		if r == nil {
			t.Fatalf("no llm_response for call %d", i+1)
		}
		if !equalInts(r.PromptTokenIDs, want[0]) || !equalInts(r.CompletionTokenIDs, want[1]) {
			t.Errorf("call %d: captured ids differ from the engine's", i+1)
		}
		if len(r.Logprobs) != len(r.CompletionTokenIDs) {
			t.Fatalf("call %d: %d logprobs for %d tokens", i+1, len(r.Logprobs), len(r.CompletionTokenIDs))
		}
		for j, id := range r.CompletionTokenIDs {
			if r.Logprobs[j] != fakellm.EngineLogprob(id, j) {
				t.Fatalf("call %d: logprob %d = %v", i+1, j, r.Logprobs[j])
			}
		}
		if r.Traffic != TrafficTraining || r.LatencyMS == nil || r.Extra["issues"] != nil {
			t.Errorf("call %d: %+v", i+1, r)
		}
	}
}

// TestChatStreaming: a streamed call is answered with the full chunk
// lifecycle re-synthesised from the engine's non-streamed answer.
func TestChatStreaming(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	long := strings.Repeat("word ", 40)
	msgs := []any{map[string]any{"role": "user", "content": long + ` call add {"a":1,"b":2}`}}
	status, body := gw.post(t, "/v1/chat/completions", gw.bearer(), map[string]any{
		"model": "m", "messages": msgs, "tools": addTools, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	evs := parseSSE(t, body)
	if len(evs) < 4 || evs[len(evs)-1].Data != "[DONE]" {
		t.Fatalf("stream does not end in [DONE]: %v", evs)
	}
	var args, name, id, finish string
	var usage *tokenUsage
	for i, ev := range evs[:len(evs)-1] {
		var ch struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role      string `json:"role"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *tokenUsage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &ch); err != nil || ch.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %d: %s (%v)", i, ev.Data, err)
		}
		if i == 0 && (len(ch.Choices) != 1 || ch.Choices[0].Delta.Role != "assistant") {
			t.Errorf("first chunk carries no role: %s", ev.Data)
		}
		if ch.Usage != nil {
			usage = ch.Usage
			continue
		}
		for _, tc := range ch.Choices[0].Delta.ToolCalls {
			if tc.ID != "" {
				id, name = tc.ID, tc.Function.Name
			}
			args += tc.Function.Arguments
		}
		if f := ch.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if name != "add" || id == "" || args != `{"a":1,"b":2}` || finish != "tool_calls" {
		t.Errorf("reassembled call %q %q %q, finish %q", id, name, args, finish)
	}
	r := gw.events.responses()[1]
	if usage == nil || usage.CompletionTokens != len(r.CompletionTokenIDs) {
		t.Errorf("usage chunk %+v, want %d completion tokens", usage, len(r.CompletionTokenIDs))
	}
	req := gw.events.list()[0].Data.(*wire.LLMRequest)
	if !req.Stream {
		t.Errorf("llm_request does not record the stream")
	}
	// Streamed text comes in several deltas that add up.
	msgs = []any{map[string]any{"role": "user", "content": long}}
	_, body = gw.post(t, "/v1/chat/completions", gw.bearer(), map[string]any{"model": "m", "messages": msgs, "tools": addTools, "stream": true})
	var text string
	deltas := 0
	for _, ev := range parseSSE(t, body) {
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if ev.Data != "[DONE]" && json.Unmarshal([]byte(ev.Data), &ch) == nil && len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			text += ch.Choices[0].Delta.Content
			deltas++
		}
	}
	if text != "MOCK-REPLY: "+long || deltas < 2 {
		t.Errorf("streamed text %q in %d deltas", text, deltas)
	}
}

// TestAuth: only the episode's key opens the door; the upstream's real key,
// a wrong key or none get 401 in OpenAI's shape and reach nothing.
func TestAuth(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	req := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	for name, h := range map[string]map[string]string{
		"none":      nil,
		"wrong":     {"Authorization": "Bearer sk-harnessd-wrong"},
		"real key":  {"Authorization": "Bearer " + realKey},
		"x-api-key": {"X-Api-Key": realKey},
		"prefix":    {"Authorization": "Bearer " + gw.Key()[:len(gw.Key())-1]},
	} {
		status, body := gw.post(t, "/v1/chat/completions", h, req)
		var e struct {
			Error struct {
				Type string `json:"type"`
				Code string `json:"code"`
			} `json:"error"`
		}
		if status != http.StatusUnauthorized || json.Unmarshal(body, &e) != nil || e.Error.Code != "invalid_api_key" {
			t.Errorf("%s: %d %s", name, status, body)
		}
	}
	if n := len(llm.Requests()); n != 0 || len(gw.events.list()) != 0 {
		t.Fatalf("refused calls reached the upstream (%d) or were recorded", n)
	}
	for name, h := range map[string]map[string]string{
		"bearer":         gw.bearer(),
		"x-api-key":      {"X-Api-Key": gw.Key()},
		"x-goog-api-key": {"X-Goog-Api-Key": gw.Key()},
	} {
		if status, body := gw.post(t, "/v1/chat/completions", h, req); status != 200 {
			t.Errorf("%s: %d %s", name, status, body)
		}
	}
	if status, body := gw.post(t, "/v1/chat/completions?key="+gw.Key(), nil, req); status != 200 {
		t.Errorf("?key=: %d %s", status, body)
	}
}

// TestHygiene: what the engine gets is normalised.
func TestHygiene(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{Budgets: Budgets{MaxTokens: 1000}})
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	cases := []struct {
		name  string
		extra map[string]any
		check func(up map[string]json.RawMessage) string
	}{
		{"caps max_tokens", map[string]any{"max_tokens": 64000, "stream_options": map[string]any{"include_usage": true},
			"tools": []any{}, "tool_choice": "auto", "parallel_tool_calls": true, "n": 3},
			func(up map[string]json.RawMessage) string {
				for _, k := range []string{"stream_options", "tools", "tool_choice", "parallel_tool_calls", "n"} {
					if _, ok := up[k]; ok {
						return k + " kept"
					}
				}
				if string(up["max_tokens"]) != "1000" {
					return "max_tokens " + string(up["max_tokens"])
				}
				return ""
			}},
		{"max_completion_tokens below the cap", map[string]any{"max_completion_tokens": 200},
			func(up map[string]json.RawMessage) string {
				if _, ok := up["max_completion_tokens"]; ok || string(up["max_tokens"]) != "200" {
					return "max tokens " + string(up["max_tokens"]) + " / " + string(up["max_completion_tokens"])
				}
				return ""
			}},
		{"no max_tokens gets the cap, tools kept", map[string]any{"tools": addTools, "tool_choice": "auto"},
			func(up map[string]json.RawMessage) string {
				if string(up["max_tokens"]) != "1000" || up["tools"] == nil || string(up["tool_choice"]) != `"auto"` {
					return "got " + string(up["max_tokens"]) + " " + string(up["tool_choice"])
				}
				return ""
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			llm.Reset()
			req := map[string]any{"model": "m", "messages": msgs}
			for k, v := range c.extra {
				req[k] = v
			}
			if status, body := gw.post(t, "/v1/chat/completions", gw.bearer(), req); status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			es := llm.Requests()
			if len(es) != 1 {
				t.Fatalf("%d upstream requests", len(es))
			}
			var up map[string]json.RawMessage
			json.Unmarshal(es[0].Body, &up)
			if msg := c.check(up); msg != "" {
				t.Errorf("%s: %s", msg, es[0].Body)
			}
		})
	}
}
