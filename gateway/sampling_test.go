package gateway

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

func ptr[T any](v T) *T { return &v }

// testPin is the pin of the sampling tests.
var testPin = &Sampling{Temperature: ptr(1.0), TopP: ptr(1.0), TopK: ptr(-1), MinP: ptr(0.0), Seed: ptr(int64(7)), MaxTokens: ptr(256)}

// pinnedFields is what the engine must receive of testPin.
var pinnedFields = map[string]any{"temperature": 1.0, "top_p": 1.0, "top_k": -1.0, "min_p": 0.0, "seed": 7.0, "max_tokens": 256.0}

// engineSampling returns the sampling fields of the body the engine got
// (the gateway's own logprobs and return_token_ids left out).
func engineSampling(t *testing.T, e fakellm.Entry) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(e.Body, &body); err != nil {
		t.Fatalf("engine request %d: %v", e.Seq, err)
	}
	out := map[string]any{}
	for k, v := range body {
		if isSamplingField(k) || k == "max_tokens" || k == "max_completion_tokens" {
			out[k] = v
		}
	}
	return out
}

// TestSamplingPinPerDialect: an agent of each dialect asks for its own
// sampling in its own names, with fields that distort sampling; the engine
// receives exactly the pinned fields, and the export records what was asked,
// sent and stripped, and no difference from the pin.
func TestSamplingPinPerDialect(t *testing.T) {
	cases := []struct {
		dialect              Dialect
		path                 string
		body                 map[string]any
		stripped, overridden []string
	}{
		{DialectChat, "/v1/chat/completions", map[string]any{"model": "m", "messages": []any{user("hi")},
			"temperature": 0.2, "top_p": 0.5, "top_k": 20, "min_p": 0.1, "seed": 1, "max_tokens": 9000,
			"logit_bias": map[string]any{"42": 100}, "presence_penalty": 1.5, "frequency_penalty": 0.5,
			"repetition_penalty": 1.1, "best_of": 3, "n": 2, "response_format": map[string]any{"type": "json_object"},
			"guided_regex": "a+"},
			[]string{"best_of", "frequency_penalty", "guided_regex", "logit_bias", "presence_penalty",
				"repetition_penalty", "response_format"},
			[]string{"max_tokens", "min_p", "seed", "temperature", "top_k", "top_p"}},
		{DialectResponses, "/v1/responses", map[string]any{"model": "gpt-5", "input": "hi", "temperature": 0.3, "top_p": 0.9,
			"max_output_tokens": 9000,
			"text":              map[string]any{"format": map[string]any{"type": "json_schema", "name": "x", "schema": map[string]any{"type": "object"}}}},
			[]string{"response_format"}, []string{"max_tokens", "temperature", "top_p"}},
		{DialectAnthropic, "/v1/messages", map[string]any{"model": "claude", "max_tokens": 32000, "temperature": 0.7, "top_k": 5,
			"top_p": 0.8, "messages": []any{user("hi")}},
			nil, []string{"max_tokens", "temperature", "top_k", "top_p"}},
		{DialectGemini, "/v1beta/models/gemini-2.5-pro:generateContent", map[string]any{
			"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}},
			"generationConfig": map[string]any{"temperature": 0, "topP": 0.95, "topK": 64, "maxOutputTokens": 9000,
				"presencePenalty": 0.5, "frequencyPenalty": 0.2, "candidateCount": 1, "seed": 3}},
			[]string{"frequency_penalty", "presence_penalty"}, []string{"max_tokens", "seed", "temperature", "top_k", "top_p"}},
	}
	for _, c := range cases {
		t.Run(string(c.dialect), func(t *testing.T) {
			llm := engine(t, fakellm.Options{})
			gw := startGateway(t, llm.URL(), Options{Sampling: testPin})
			headers := gw.bearer()
			switch c.dialect {
			case DialectAnthropic:
				headers = gw.anthropicHeaders()
			case DialectGemini:
				headers = gw.geminiHeaders()
			}
			if status, body := gw.post(t, c.path, headers, c.body); status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			reqs := llm.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d engine requests", len(reqs))
			}
			if got := engineSampling(t, reqs[0]); !reflect.DeepEqual(got, pinnedFields) {
				t.Errorf("the engine got sampling %v, want exactly the pin %v", got, pinnedFields)
			}
			ex, err := gw.Export()
			if err != nil {
				t.Fatal(err)
			}
			call := ex.Calls[0]
			if !call.SamplingPinned || len(call.SamplingDiffers) != 0 || !slices.Equal(call.SamplingStripped, c.stripped) ||
				!slices.Equal(call.SamplingOverridden, c.overridden) {
				t.Errorf("export: pinned %v, differs %v, stripped %v (want %v), overridden %v (want %v)", call.SamplingPinned,
					call.SamplingDiffers, call.SamplingStripped, c.stripped, call.SamplingOverridden, c.overridden)
			}
			var asked, sent map[string]any
			json.Unmarshal(call.Sampling, &asked)
			json.Unmarshal(call.EffectiveSampling, &sent)
			if len(asked) == 0 {
				t.Errorf("export: the agent's own sampling is not recorded")
			}
			delete(sent, "logprobs")
			delete(sent, "return_token_ids")
			if !reflect.DeepEqual(sent, pinnedFields) {
				t.Errorf("export: effective sampling %v, want the pin %v", sent, pinnedFields)
			}
			if ex.PinnedSampling == nil || string(ex.PinnedSampling.Pinned()) == "" {
				t.Errorf("export: no pinned_sampling")
			}
		})
	}
}

// TestSamplingPinDiffers: a budget lowering the pinned max_tokens, an
// allowed field and a kept stop sequence are marked as differences; with
// strip_stop the stop sequence goes; without a pin nothing is stripped or
// marked, and the agent's fields reach the engine as before.
func TestSamplingPinDiffers(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	pin := *testPin
	pin.Allow = []string{"presence_penalty"}
	gw := startGateway(t, llm.URL(), Options{Sampling: &pin, Budgets: Budgets{MaxTokens: 100}})
	ask := map[string]any{"model": "m", "messages": []any{user("hi")}, "temperature": 0.2, "presence_penalty": 1.5, "stop": []string{"\n\n"}}
	if status, body := gw.post(t, "/v1/chat/completions", gw.bearer(), ask); status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	strip := pin
	strip.StripStop, strip.Allow = true, nil
	gw.SetSampling(&strip)
	if status, body := gw.post(t, "/v1/chat/completions", gw.bearer(), ask); status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	gw.SetSampling(nil)
	if status, body := gw.post(t, "/v1/chat/completions", gw.bearer(), ask); status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	ex, err := gw.Export()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		differs, stripped []string
		pinned            bool
	}{
		{[]string{"max_tokens", "presence_penalty", "stop"}, nil, true},
		{[]string{"max_tokens"}, []string{"presence_penalty", "stop"}, true},
		{nil, nil, false},
	}
	for i, w := range want {
		c := ex.Calls[i]
		if !slices.Equal(c.SamplingDiffers, w.differs) || !slices.Equal(c.SamplingStripped, w.stripped) || c.SamplingPinned != w.pinned {
			t.Errorf("call %d: differs %v, stripped %v, pinned %v; want %v, %v, %v", c.CallIndex, c.SamplingDiffers,
				c.SamplingStripped, c.SamplingPinned, w.differs, w.stripped, w.pinned)
		}
	}
	reqs := llm.Requests()
	got := engineSampling(t, reqs[0])
	if got["max_tokens"] != 100.0 || got["presence_penalty"] != 1.5 || got["temperature"] != 1.0 {
		t.Errorf("call 1: the engine got %v", got)
	}
	if got := engineSampling(t, reqs[2]); got["temperature"] != 0.2 || got["presence_penalty"] != 1.5 || got["stop"] == nil {
		t.Errorf("call 3 (no pin): the engine got %v, want the agent's own", got)
	}
}

// TestSamplingValidate refuses pins a trainer could not mean.
func TestSamplingValidate(t *testing.T) {
	for _, c := range []struct {
		s    Sampling
		want string
	}{
		{Sampling{TopP: ptr(0.0)}, "top_p"},
		{Sampling{Temperature: ptr(-1.0)}, "temperature"},
		{Sampling{MaxTokens: ptr(0)}, "max_tokens"},
		{Sampling{TopK: ptr(-2)}, "top_k"},
		{Sampling{MinP: ptr(2.0)}, "min_p"},
		{Sampling{Temperature: ptr(1.0), Allow: []string{"temperature"}}, "is pinned"},
		{Sampling{Allow: []string{"n"}}, "always dropped"},
		{Sampling{Allow: []string{"stop"}}, "strip_stop"},
		{Sampling{Allow: []string{"tools"}}, "not a sampling field"},
	} {
		err := c.s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error about %s", c.s, err, c.want)
		}
	}
	if err := (&Sampling{Temperature: ptr(0.0), Allow: []string{"logit_bias", "top_p"}}).Validate(); err != nil {
		t.Errorf("a good pin: %v", err)
	}
	merged := testPin.Merge(&Sampling{Temperature: ptr(0.6), StripStop: true})
	if *merged.Temperature != 0.6 || *merged.TopP != 1.0 || !merged.StripStop || *testPin.Temperature != 1.0 {
		t.Errorf("merge: %+v", merged)
	}
}
