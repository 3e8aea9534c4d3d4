package dialect

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// Anthropic messages and tools and Gemini contents, parts and function
// declarations were decoded whole: 6,000 empty ones ({},, 18 KB, within
// the door's charge) cost 1 to 1.9 MiB (58× to 111× the body), the
// Anthropic messages to be refused for the first's role. They are read one
// at a time, an element none of whose keys can name a field neither
// decoded nor kept (Anthropic's messages checked in a first pass, so that
// a list that does not decode is refused first, as before). The control:
// conversations translate as before (Gemini's call ids keep the parts'
// places), and malformed ones are refused as before.
func TestOtherListsAllocateInProportionToTheBody(t *testing.T) {
	empty := strings.TrimSuffix(strings.Repeat("{},", 6000), ",")
	r := httptest.NewRequest("POST", "/v1beta/models/m:generateContent", nil)
	for _, c := range []struct {
		d                Name
		name, body, fail string
	}{
		{Anthropic, "Anthropic, 6,000 empty messages", `{"model":"m","max_tokens":8,"messages":[` + empty + `]}`, `message 0 has role ""`},
		{Anthropic, "Anthropic, 6,000 empty tools", `{"model":"m","max_tokens":8,"tools":[` + empty + `],"messages":[{"role":"user","content":"hi"}]}`, ""},
		{Gemini, "Gemini, 6,000 empty contents", `{"contents":[` + empty + `]}`, ""},
		{Gemini, "Gemini, 6,000 empty parts", `{"contents":[{"role":"user","parts":[` + empty + `]}]}`, ""},
		{Gemini, "Gemini, 6,000 empty function declarations", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[` + empty + `]}]}`, ""},
	} {
		body := []byte(c.body)
		var err error
		got := testbin.Allocated(func() { _, err = New(c.d).Decode(r, body) })
		if (c.fail == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.fail)) {
			t.Fatalf("%s: %v, want %q", c.name, err, c.fail)
		}
		t.Logf("%s, %d KB: %d KiB allocated", c.name, len(body)>>10, got>>10)
		if got > 6*uint64(len(body)) {
			t.Errorf("%s, %d KB: %d KiB allocated (over 6× the body)", c.name, len(body)>>10, got>>10)
		}
	}

	for _, c := range []struct {
		d          Name
		body, want string
	}{
		{Anthropic, `{"model":"m","max_tokens":8,"system":"s","tools":[{},{"name":"f","input_schema":{"type":"object"}},{"name":"web"}],"messages":[` +
			`{"role":"user","content":"hi"},{"Role":"assistant","content":[{"type":"tool_use","id":"u","name":"f","input":{}}]},{"content":[{"type":"tool_result","tool_use_id":"u","content":"r"}],"role":"user"}]}`,
			`[{"content":"s","role":"system"},{"content":"hi","role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"u","type":"function"}]},{"content":"r","role":"tool","tool_call_id":"u"}] [{"function":{"name":"f","parameters":{"type":"object"}},"type":"function"}]`},
		{Gemini, `{"systemInstruction":{"parts":[{},{"text":"s"}]},"contents":[{},{"role":"user","parts":[{"text":"hi"}]},` +
			`{"role":"model","parts":[{},{"functionCall":{"name":"f","args":{}}},null,{"functionCall":{"name":"g","args":{}}}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"r"}}}]}],"tools":[{"functionDeclarations":[{},{"name":"f","parameters":{"type":"object"}}]}]}`,
			`[{"content":"s","role":"system"},{"content":"hi","role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"call_2_1","type":"function"},{"function":{"arguments":"{}","name":"g"},"id":"call_2_3","type":"function"}]},{"content":"r","role":"tool","tool_call_id":"call_2_1"}] [{"function":{"name":"f","parameters":{"type":"object"}},"type":"function"}]`},
	} {
		req, err := New(c.d).Decode(r, []byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.d, err)
		}
		ms, _ := json.Marshal(req.Chat.Messages)
		ts, _ := json.Marshal(req.Chat.Tools)
		if got := string(ms) + " " + string(ts); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.d, got, c.want)
		}
	}
	for _, c := range [][3]string{
		{string(Anthropic), `{"model":"m","max_tokens":8,"messages":[{},1]}`, "messages must be a non-empty list"},
		{string(Anthropic), `{"model":"m","max_tokens":8,"messages":[{},{"role":1}]}`, "messages must be a non-empty list"},
		{string(Anthropic), `{"model":"m","max_tokens":8,"messages":[]}`, "messages must be a non-empty list"},
		{string(Anthropic), `{"model":"m","max_tokens":8,"system":1,"messages":[{}]}`, "system"},
		{string(Anthropic), `{"model":"m","max_tokens":8,"tools":[{},1],"messages":[{"role":"user","content":"hi"}]}`, "tools must be a list of tools"},
		{string(Gemini), `{"contents":[]}`, "contents must be a non-empty list"},
		{string(Gemini), `{"contents":{}}`, "cannot unmarshal object"},
		{string(Gemini), `{"contents":[{"parts":"x"}]}`, "cannot unmarshal string"},
		{string(Gemini), `{"contents":[{"parts":[{"text":1}]}]}`, "cannot unmarshal number"},
		{string(Gemini), `{"contents":[{},{"role":"x"}]}`, `content 1 has role "x"`},
	} {
		if _, err := New(Name(c[0])).Decode(r, []byte(c[1])); err == nil || !strings.Contains(err.Error(), c[2]) {
			t.Errorf("%s: %v, want %q", c[1], err, c[2])
		}
	}
}
