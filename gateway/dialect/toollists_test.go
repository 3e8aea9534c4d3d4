package dialect

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// The offered tools were decoded whole: Chat Completions' into raw values
// and then each into a struct, 6,000 empty tools ({},, 18 KB, within the
// door's charge) costing 2.1 MiB (123× the body); Responses' into a slice
// of tools and then copied, 4.6 MiB (268×). They are read one at a time,
// an element none of whose keys names a field not decoded. The control:
// tools of every shape translate as before, and a list that is not one is
// refused as before.
func TestToolListsAllocateInProportionToTheBody(t *testing.T) {
	empty := strings.TrimSuffix(strings.Repeat("{},", 6000), ",")
	for _, c := range []struct {
		d          Name
		name, body string
		bound      uint64 // times the body
	}{
		{Chat, "Chat Completions, 6,000 empty tools", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[` + empty + `]}`, 40},
		{Responses, "Responses, 6,000 empty tools", `{"model":"m","input":"hi","tools":[` + empty + `]}`, 3},
	} {
		body := []byte(c.body)
		got := testbin.Allocated(func() {
			if _, err := New(c.d).Decode(nil, body); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%s, %d KB: %d KiB allocated", c.name, len(body)>>10, got>>10)
		if got > c.bound*uint64(len(body)) {
			t.Errorf("%s, %d KB: %d KiB allocated (over %d× the body)", c.name, len(body)>>10, got>>10, c.bound)
		}
	}

	req, err := New(Chat).Decode(nil, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[`+
		`{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}},{},0,null,{"Function":{"name":"g"}},{"x":{"function":1}}]}`))
	if got := fmt.Sprintf("%q", req.Chat.Tools); err != nil || got != `[{"f" "d" "{\"type\":\"object\"}"} {"" "" ""} {"" "" ""} {"" "" ""} {"g" "" ""} {"" "" ""}]` {
		t.Errorf("chat tools: %s %v", got, err)
	}
	req, err = New(Responses).Decode(nil, []byte(`{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{},null,`+
		`{"type":"namespace","name":"mcp__env__","tools":[{"type":"function","name":"add"},{"type":"other","name":"x"}]},{"type":"web_search"},{"TYPE":"function","Name":"h"}]}`))
	if got := fmt.Sprintf("%q", req.Chat.Tools); err != nil || got != `[{"f" "" "{\"type\":\"object\"}"} {"mcp__env__add" "" ""} {"h" "" ""}]` {
		t.Errorf("responses tools: %s %v", got, err)
	}
	for _, c := range [][2]string{
		{string(Chat), `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":{}}`},
		{string(Responses), `{"model":"m","input":"hi","tools":[1]}`},
		{string(Responses), `{"model":"m","input":"hi","tools":[{},{"name":1}]}`},
	} {
		if _, err := New(Name(c[0])).Decode(nil, []byte(c[1])); err == nil || !strings.Contains(err.Error(), "tools must be a list") {
			t.Errorf("%s: %v, want refused", c[1], err)
		}
	}
}
