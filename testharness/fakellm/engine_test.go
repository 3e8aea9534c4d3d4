package fakellm_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

// engineAnswer is what a vLLM-style answer carries at the token level.
type engineAnswer struct {
	PromptTokenIDs []int `json:"prompt_token_ids"`
	Choices        []struct {
		TokenIDs []int `json:"token_ids"`
		Message  struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token   string  `json:"token"`
				Logprob float64 `json:"logprob"`
				Bytes   []int   `json:"bytes"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func postEngine(t *testing.T, c *http.Client, url string, body any) engineAnswer {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := c.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	var a engineAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return a
}

func startEngine(t *testing.T, opts fakellm.Options) (string, *http.Client) {
	t.Helper()
	opts.Engine = true
	s := fakellm.New(opts)
	base, err := s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() { s.Close(); tr.CloseIdleConnections() })
	return base, &http.Client{Transport: tr}
}

// TestEngineTokenIDsAndChains checks vLLM's fields and that the second
// call's prompt ids start with the first call's prompt + completion ids
// when the client sends the answer back unchanged.
func TestEngineTokenIDsAndChains(t *testing.T) {
	base, c := startEngine(t, fakellm.Options{})
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "add", "parameters": map[string]any{"type": "object"}}}}
	msgs := []any{map[string]any{"role": "user", "content": `call add {"a":2,"b":3}`}}
	req := map[string]any{"model": "m", "messages": msgs, "tools": tools, "return_token_ids": true, "logprobs": true}
	a := postEngine(t, c, base+"/v1/chat/completions", req)

	ch := a.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("want one tool call, got %+v", ch)
	}
	tc := ch.Message.ToolCalls[0]
	toolsJSON, _ := json.Marshal(tools)
	var em []fakellm.EngineMessage
	mb, _ := json.Marshal(msgs)
	json.Unmarshal(mb, &em)
	wantPrompt := fakellm.EngineTokenize(fakellm.EngineRenderPrompt(toolsJSON, em))
	wantCompletion := fakellm.EngineTokenize(fakellm.EngineRenderCompletion("", [][2]string{{"add", tc.Function.Arguments}}))
	if !equalInts(a.PromptTokenIDs, wantPrompt) {
		t.Errorf("prompt ids differ from the template's")
	}
	if !equalInts(ch.TokenIDs, wantCompletion) {
		t.Errorf("completion ids %v, want %v", ch.TokenIDs, wantCompletion)
	}
	if ch.Logprobs == nil || len(ch.Logprobs.Content) != len(ch.TokenIDs) {
		t.Fatalf("logprobs do not line up with token_ids")
	}
	for i, lp := range ch.Logprobs.Content {
		if lp.Token != "token_id:"+strconv.Itoa(ch.TokenIDs[i]) || lp.Logprob != fakellm.EngineLogprob(ch.TokenIDs[i], i) {
			t.Fatalf("logprob %d = %+v", i, lp)
		}
	}
	if a.Usage.PromptTokens != len(wantPrompt) || a.Usage.CompletionTokens != len(wantCompletion) {
		t.Errorf("usage %+v", a.Usage)
	}

	// Second call: the answer and a tool result appended.
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": tc.ID, "type": "function",
			"function": map[string]any{"name": "add", "arguments": tc.Function.Arguments}}}},
		map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": "5"})
	req["messages"] = msgs
	b := postEngine(t, c, base+"/v1/chat/completions", req)
	prefix := append(append([]int{}, a.PromptTokenIDs...), ch.TokenIDs...)
	if len(b.PromptTokenIDs) <= len(prefix) || !equalInts(b.PromptTokenIDs[:len(prefix)], prefix) {
		t.Fatalf("second prompt does not extend the first call's prompt+completion")
	}
	if got := *b.Choices[0].Message.Content; got != "MOCK-DONE: 5" {
		t.Errorf("second answer %q", got)
	}
}

// TestEngineOnlyWhenAsked: without return_token_ids and logprobs the
// answer is plain chat; with tokens as text the token strings are text.
func TestEngineOnlyWhenAsked(t *testing.T) {
	base, c := startEngine(t, fakellm.Options{EngineTokensAsText: true})
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	a := postEngine(t, c, base+"/v1/chat/completions", map[string]any{"model": "m", "messages": msgs})
	if a.PromptTokenIDs != nil || a.Choices[0].TokenIDs != nil || a.Choices[0].Logprobs != nil {
		t.Fatalf("unasked-for engine fields: %+v", a)
	}
	a = postEngine(t, c, base+"/v1/chat/completions", map[string]any{"model": "m", "messages": msgs, "logprobs": true})
	if a.Choices[0].Logprobs == nil || a.Choices[0].Logprobs.Content[0].Token != "M" {
		t.Fatalf("want text tokens, got %+v", a.Choices[0].Logprobs)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
