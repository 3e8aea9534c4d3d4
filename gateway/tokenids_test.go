package gateway

import (
	"encoding/json"
	"testing"
)

// TestTokenIDsDecoding: the reflection-free id list decoder agrees with
// encoding/json on good input and refuses bad input.
func TestTokenIDsDecoding(t *testing.T) {
	for _, good := range []string{`[]`, `null`, `[0]`, `[1,2,3]`, " [ 12 , 7 ,\n 99 ] ", `[151643]`} {
		var fast tokenIDs
		var slow []int
		if err := json.Unmarshal([]byte(good), &fast); err != nil {
			t.Errorf("%s: %v", good, err)
			continue
		}
		json.Unmarshal([]byte(good), &slow)
		if !equalInts(fast, slow) {
			t.Errorf("%s: %v, want %v", good, fast, slow)
		}
	}
	for _, bad := range []string{`[1,,2]`, `[1 2]`, `[1,]`, `[-1]`, `[1.5]`, `["1"]`, `{}`, `[9999999999999]`, `[,]`} {
		var fast tokenIDs
		if err := json.Unmarshal([]byte(bad), &fast); err == nil {
			t.Errorf("%s: no error (%v)", bad, fast)
		}
	}
}

// TestCutMember: removing a top-level member leaves valid JSON that
// decodes to the rest, wherever the member sits.
func TestCutMember(t *testing.T) {
	for _, c := range []struct{ in, value, rest string }{
		{`{"prompt_token_ids":[1,2],"a":1}`, `[1,2]`, `{"a":1}`},
		{`{"a":"x\"}","prompt_token_ids":[3] , "b":{"prompt_token_ids":[9]}}`, `[3]`, `{"a":"x\"}", "b":{"prompt_token_ids":[9]}}`},
		{`{"a":[1,{"b":"]"}], "prompt_token_ids" : null}`, `null`, `{"a":[1,{"b":"]"}]}`},
		{` {"prompt_token_ids":[]} `, `[]`, ` {} `},
	} {
		v, rest, ok, err := cutMember([]byte(c.in), "prompt_token_ids")
		if err != nil || !ok || string(v) != c.value || string(rest) != c.rest || !json.Valid(rest) {
			t.Errorf("%s: %q %q %v %v", c.in, v, rest, ok, err)
		}
	}
	if _, rest, ok, err := cutMember([]byte(`{"a":{"prompt_token_ids":[1]}}`), "prompt_token_ids"); ok || err != nil || string(rest) != `{"a":{"prompt_token_ids":[1]}}` {
		t.Errorf("nested member cut: %q %v %v", rest, ok, err)
	}
	for _, bad := range []string{`[1]`, `{"a":`, `{"a" 1}`, `{"a":"x`, `{"a":[1}`, `{1:2}`, ``} {
		if _, _, ok, err := cutMember([]byte(bad), "prompt_token_ids"); ok || err == nil {
			t.Errorf("%q: ok=%v err=%v", bad, ok, err)
		}
	}
}
