package dialect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// A request's messages were decoded whole before any was read: 6,000 empty
// Chat Completions messages ({},, 18 KB, within the door's charge) cost 4
// MiB (232× the body) to be refused for the first's missing role, a loop
// of refusals costing no model call; 6,000 empty Responses items 3.3 MiB
// (189×), 6,000 empty parts of a Responses message 1.5 MiB (85×). Chat
// messages are read one at a time and refused at the first without a
// role; Responses items and parts that decode to nothing are neither
// decoded nor kept. The control: conversations of every shape translate
// as before, and malformed ones are refused with the same error.
func TestMessageListsAllocateInProportionToTheBody(t *testing.T) {
	empty := strings.TrimSuffix(strings.Repeat("{},", 6000), ",")
	for _, c := range []struct {
		d                Name
		name, body, fail string
		bound            uint64 // times the body
	}{
		{Chat, "Chat Completions, 6,000 empty messages", `{"model":"m","messages":[` + empty + `]}`, "message 0 has no role", 4},
		{Responses, "Responses, 6,000 empty items and a message", `{"model":"m","input":[` + empty + `,{"role":"user","content":"hi"}]}`, "", 6},
		{Responses, "Responses, a message of 6,000 empty parts", `{"model":"m","input":[{"role":"user","content":[` + empty + `]}]}`, "", 7},
	} {
		body := []byte(c.body)
		var err error
		got := testbin.Allocated(func() { _, err = New(c.d).Decode(nil, body) })
		if (c.fail == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.fail)) {
			t.Fatalf("%s: %v, want %q", c.name, err, c.fail)
		}
		t.Logf("%s, %d KB: %d KiB allocated", c.name, len(body)>>10, got>>10)
		if got > c.bound*uint64(len(body)) {
			t.Errorf("%s, %d KB: %d KiB allocated (over %d× the body)", c.name, len(body)>>10, got>>10, c.bound)
		}
	}

	for _, c := range []struct {
		d          Name
		body, want string
	}{
		{Chat, `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"}]},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
			`[{"content":"s","role":"system"},{"content":[{"text":"a","type":"text"}],"role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"c","type":"function"}]},{"content":"r","role":"tool","tool_call_id":"c"}]`},
		{Responses, `{"model":"m","instructions":"s","input":[{},{"role":"user","content":[{"type":"input_text","text":"a"},{},{"type":"input_image","image_url":"u"},null]},` +
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},null,{"type":"function_call_output","call_id":"c","output":"r"}]}`,
			`[{"content":"s","role":"system"},{"content":[{"text":"a","type":"text"},{"image_url":{"url":"u"},"type":"image_url"}],"role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"c","type":"function"}]},{"content":"r","role":"tool","tool_call_id":"c"}]`},
	} {
		req, err := New(c.d).Decode(nil, []byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.d, err)
		}
		if got, _ := json.Marshal(req.Chat.Messages); string(got) != c.want {
			t.Errorf("%s messages:\n%s\nwant\n%s", c.d, got, c.want)
		}
	}
	for _, c := range [][3]string{
		{string(Chat), `{"model":"m","messages":[{},1]}`, "messages must be a non-empty list of objects"},
		{string(Chat), `{"model":"m","messages":[]}`, "messages must be a non-empty list of objects"},
		{string(Chat), `{"model":"m","messages":[{"role":"user"},null]}`, "message 1 has no role"},
		{string(Responses), `{"model":"m","input":[{"role":"x"},{"role":1}]}`, "input must be a string or a non-empty list of items"},
		{string(Responses), `{"model":"m","input":[{},{"role":"x"}]}`, `item 1 has role "x"`},
		{string(Responses), `{"model":"m","input":[]}`, "input must be a string or a non-empty list of items"},
		{string(Responses), `{"model":"m","input":[{}]}`, "no messages"},
		{string(Responses), `{"model":"m","input":[{"role":"user","content":[{},{"text":1}]}]}`, "content must be a string or a list of parts"},
	} {
		if _, err := New(Name(c[0])).Decode(nil, []byte(c[1])); err == nil || !strings.Contains(err.Error(), c[2]) {
			t.Errorf("%s: %v, want %q", c[1], err, c[2])
		}
	}
}

// A request that continues the remembered one (Memo) had its new messages
// decoded whole before the first was read: 6,000 empty ones after the
// remembered head cost 3.5 MiB (the miss, then the full decode) to be
// refused. They are read one at a time there too: the miss comes at the
// first. The control: the existing memo tests (a continuation is served
// from the memo).
func TestContinuedChatRequestMissesAtTheFirstBadMessage(t *testing.T) {
	var m Memo
	tr := &chatTranslator{memo: &m}
	if _, err := tr.Decode(nil, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"},` + strings.TrimSuffix(strings.Repeat("{},", 6000), ",") + `]}`)
	var err error
	got := testbin.Allocated(func() { _, err = tr.Decode(nil, body) })
	t.Logf("a continuation of 6,000 empty messages, %d KB: %v, %d KiB allocated", len(body)>>10, err, got>>10)
	if err == nil || !strings.Contains(err.Error(), "message 1 has no role") {
		t.Errorf("a continuation of 6,000 empty messages: %v, want refused", err)
	}
	if got > 6*uint64(len(body)) {
		t.Errorf("a continuation of 6,000 empty messages, %d KB: %d KiB allocated (over 6× the body)", len(body)>>10, got>>10)
	}
}
