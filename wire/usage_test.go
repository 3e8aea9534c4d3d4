package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTokenUsageWire: the gateway's usage is written in the OpenAI
// spelling; a usage decoded from a producer's JSON (any spelling, any
// value) is written back byte for byte, and its OpenAI counts are read.
func TestTokenUsageWire(t *testing.T) {
	b, err := json.Marshal(&LLMResponse{Content: "x", Usage: &TokenUsage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}`) {
		t.Errorf("gateway usage on the wire: %s", b)
	}
	if b, _ := json.Marshal(&LLMResponse{Content: "x"}); strings.Contains(string(b), "usage") {
		t.Errorf("absent usage written: %s", b)
	}
	for _, tc := range []struct {
		data             string
		prompt, complete int
	}{
		{`{"content":"x","usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5,"cached":{"n":1}}}`, 4, 1},
		{`{"content":"x","usage":{"input_tokens":3,"output_tokens":8}}`, 0, 0},
		{`{"content":"x","usage":5}`, 0, 0},
		{`{"content":"x","usage":"lots"}`, 0, 0},
		{`{"content":"x","usage":[1,2]}`, 0, 0},
	} {
		p, err := DecodeChecked(EventLLMResponse, json.RawMessage(tc.data))
		if err != nil {
			t.Fatalf("%s: %v", tc.data, err)
		}
		r := p.(*LLMResponse)
		if r.Usage == nil || r.Usage.PromptTokens != tc.prompt || r.Usage.CompletionTokens != tc.complete {
			t.Errorf("%s: usage %+v", tc.data, r.Usage)
		}
		back, _ := json.Marshal(r)
		if string(back) != tc.data {
			t.Errorf("round trip changed the wire:\n %s\n %s", tc.data, back)
		}
	}
	p, err := DecodeChecked(EventLLMResponse, json.RawMessage(`{"content":"x","usage":null}`))
	if err != nil || p.(*LLMResponse).Usage != nil {
		t.Errorf("null usage: %v %+v", err, p)
	}
}
