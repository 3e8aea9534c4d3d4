package wire

import (
	"encoding/json"
	"slices"
	"testing"
)

// CallTokenIDs rebuilds deltas whatever order they come in, and refuses
// those that do not fit their parent.
func TestCallTokenIDsRebuildsInAnyOrder(t *testing.T) {
	rs := []*LLMResponse{
		{CallIndex: 1, PromptTokenIDs: []int{1, 2, 3}, CompletionTokenIDs: []int{4}},
		{CallIndex: 2, ParentCallIndex: 1, PromptTokenIDsFrom: 4, PromptTokenIDs: []int{5}, CompletionTokenIDs: []int{6, 7}},
		{CallIndex: 3, ParentCallIndex: 2, PromptTokenIDsFrom: 7, CompletionTokenIDs: []int{8}},                 // the prompt is exactly the parent's
		{CallIndex: 4, ParentCallIndex: 1, PromptTokenIDs: []int{1, 2, 3, 4, 9}, CompletionTokenIDs: []int{10}}, // full, parent named
		{CallIndex: 5, Error: "upstream down", Status: 502},
	}
	want := map[int][]int{1: {1, 2, 3}, 2: {1, 2, 3, 4, 5}, 3: {1, 2, 3, 4, 5, 6, 7}, 4: {1, 2, 3, 4, 9}}
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {2, 1, 4, 3, 0}} {
		var c CallTokenIDs
		for _, i := range order {
			if err := c.Add(rs[i]); err != nil {
				t.Fatal(err)
			}
		}
		for i, w := range want {
			if p, ok := c.Prompt(i); !ok || !slices.Equal(p, w) {
				t.Errorf("order %v: call %d prompt %v, want %v", order, i, p, w)
			}
		}
		if _, ok := c.Prompt(5); ok || len(c.Missing()) != 0 {
			t.Errorf("order %v: a failed call has ids, or parents are missing: %v", order, c.Missing())
		}
	}
	var c CallTokenIDs
	c.Add(rs[2])
	if m := c.Missing(); !slices.Equal(m, []int{2}) {
		t.Errorf("missing %v, want [2]", m)
	}
	if err := c.Add(&LLMResponse{CallIndex: 9, PromptTokenIDsFrom: 3}); err == nil {
		t.Error("a delta without a parent was taken")
	}
	c = CallTokenIDs{}
	c.Add(rs[0])
	if err := c.Add(&LLMResponse{CallIndex: 2, ParentCallIndex: 1, PromptTokenIDsFrom: 5, PromptTokenIDs: []int{1}}); err == nil {
		t.Error("a delta beyond its parent's ids was taken")
	}
	evs := []Event{New(OriginGateway, rs[1]), New(OriginGateway, rs[0])}
	if m, err := FullPromptIDs(evs); err != nil || !slices.Equal(m[2], want[2]) {
		t.Errorf("FullPromptIDs: %v %v", m, err)
	}
	if _, err := FullPromptIDs(evs[:1]); err == nil {
		t.Error("FullPromptIDs without the parent's event did not fail")
	}
}

// CallMessages rebuilds a request's conversation from the one before.
func TestCallMessagesRebuilds(t *testing.T) {
	var c CallMessages
	for _, r := range []*LLMRequest{
		{CallIndex: 2, MessagesCallIndex: 1, MessagesFrom: 2, Messages: json.RawMessage(`[{"c":3}]`)},
		{CallIndex: 1, Messages: json.RawMessage(`[{"c":1}, {"c":2}]`)},
		{CallIndex: 3, Messages: json.RawMessage(`"a Responses input string"`)},
	} {
		if err := c.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if m, ok := c.Messages(2); !ok || string(m) != `[{"c":1},{"c":2},{"c":3}]` {
		t.Errorf("call 2: %s", m)
	}
	if m, ok := c.Messages(1); !ok || string(m) != `[{"c":1}, {"c":2}]` {
		t.Errorf("call 1 (whole, as it came): %s", m)
	}
	if m, ok := c.Messages(3); !ok || string(m) != `"a Responses input string"` {
		t.Errorf("call 3: %s", m)
	}
	if err := c.Add(&LLMRequest{CallIndex: 4, MessagesCallIndex: 3, MessagesFrom: 1, Messages: json.RawMessage(`[]`)}); err == nil {
		t.Error("a delta beyond its base's messages was taken")
	}
}
