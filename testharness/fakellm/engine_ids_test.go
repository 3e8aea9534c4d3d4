package fakellm_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

// TestEngineTokenIDsRecomputesTheAnswer checks that a logged request's
// recomputed ids are the ids engine mode answered with.
func TestEngineTokenIDsRecomputesTheAnswer(t *testing.T) {
	sc, err := fakellm.ParseScript([]byte(`{"rules":[{"when":{"tool_result":false},"reply":{"text":"calling","tool":"echo","arguments":{"text":"x"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := fakellm.New(fakellm.Options{Engine: true, Script: sc})
	base, err := srv.Start("")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	body := `{"model":"m","return_token_ids":true,"logprobs":true,"tools":[{"type":"function","function":{"name":"echo","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"hi"}]}`
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		PromptTokenIDs []int `json:"prompt_token_ids"`
		Choices        []struct {
			TokenIDs []int `json:"token_ids"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got.Choices) != 1 {
		t.Fatalf("answer: %v %+v", err, got)
	}
	es := srv.Requests()
	if len(es) != 1 {
		t.Fatalf("log: %+v", es)
	}
	prompt, completion, ok := es[0].EngineTokenIDs()
	if !ok || !slices.Equal(prompt, got.PromptTokenIDs) || !slices.Equal(completion, got.Choices[0].TokenIDs) {
		t.Fatalf("recomputed %v / %v (ok %v), answered %v / %v", prompt, completion, ok, got.PromptTokenIDs, got.Choices[0].TokenIDs)
	}
	if _, _, ok := (fakellm.Entry{Kind: fakellm.KindProbe}).EngineTokenIDs(); ok {
		t.Error("a probe has ids")
	}
}
