package dialect

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// chatBody is a chat request whose assistant message has tool calls of n
// copies of call and whose first user message has content parts of n
// copies of part (each list left out when its element is empty).
func chatBody(call, part string, n int) []byte {
	list := func(e string) string { return strings.TrimSuffix(strings.Repeat(e+",", n), ",") }
	content := `"hi"`
	if part != "" {
		content = "[" + list(part) + "]"
	}
	calls := ""
	if call != "" {
		calls = `,"tool_calls":[` + list(call) + `]`
	}
	return []byte(`{"model":"m","messages":[{"role":"user","content":` + content + `},{"role":"assistant","content":""` + calls +
		`},{"role":"user","content":"go on"}],"max_tokens":8}`)
}

// A message's tool calls and content parts were decoded whole into a
// slice of structs and then copied: a request of 6,000 empty tool calls
// ({},, 18 KB, within the door's charge of 2,048 bytes a value) cost the
// dialect 2.5 MiB, 147× the body, and 6,000 empty parts 1.6 MiB (91×). They are
// read one at a time into a list sized once, plain elements without
// reflection. The control: tool calls and parts of every shape read as
// before.
func TestChatListsAllocateInProportionToTheBody(t *testing.T) {
	for _, c := range []struct {
		name, call, part string
		bound            uint64 // times the body: 147×, 91×, 29× before
	}{
		{"6,000 empty tool calls", "{}", "", 40},
		{"6,000 empty parts", "", "{}", 40},
		{"6,000 tool calls of an empty function", `{"function":{}}`, "", 11},
	} {
		body := chatBody(c.call, c.part, 6000)
		got := testbin.Allocated(func() {
			if _, err := New(Chat).Decode(nil, body); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%s, %d KB: %d KiB allocated", c.name, len(body)>>10, got>>10)
		if got > c.bound*uint64(len(body)) {
			t.Errorf("%s, %d KB: %d KiB allocated (over %d× the body)", c.name, len(body)>>10, got>>10, c.bound)
		}
	}

	calls := `{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},{"ID":"b","function":{"Name":"g"}},null,{"function":null,"id":"c"}`
	parts := `{"type":"text","text":"t"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"a\nb"},null`
	req, err := New(Chat).Decode(nil, chatBody(calls, parts, 1))
	if err != nil {
		t.Fatal(err)
	}
	ms := req.Chat.Messages
	if got := fmt.Sprintf("%+v %+v", ms[0].Parts, ms[1].ToolCalls); got != "[{Type:text Text:t ImageURL:} {Type:image_url Text: ImageURL:u} {Type:text Text:a\nb ImageURL:} {Type: Text: ImageURL:}] "+
		`[{ID:a Name:f Arguments:{"x":1}} {ID:b Name:g Arguments:} {ID: Name: Arguments:} {ID:c Name: Arguments:}]` {
		t.Errorf("parts and tool calls: %s", got)
	}
	for _, bad := range [][2]string{{`{"id":1}`, `{"text":1}`}, {`{"function":"f"}`, `{"image_url":"u"}`}, {`0`, `0`}} {
		req, err := New(Chat).Decode(nil, chatBody(bad[0], bad[1], 1))
		if err != nil || req.Chat.Messages[1].ToolCalls != nil || req.Chat.Messages[0].Parts != nil {
			t.Errorf("%s: %v %+v", bad, err, req.Chat.Messages)
		}
	}
	req, _ = New(Chat).Decode(nil, []byte(`{"model":"m","messages":[{"role":"user","content":[]},{"role":"assistant","tool_calls":[]}]}`))
	if m := req.Chat.Messages; m[0].Parts == nil || len(m[0].Parts) != 0 || m[1].ToolCalls != nil {
		t.Errorf("empty lists: %+v", m)
	}
}
