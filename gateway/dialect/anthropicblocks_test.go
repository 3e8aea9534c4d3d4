package dialect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// Anthropic content was decoded whole into a slice of 250-byte blocks, one
// of each element however small: 6,000 empty blocks ({},, 18 KB, within the
// door's charge) as a message's content or the system prompt cost 3.5 MiB
// (205× the body). Only the kinds the translation reads are now kept, and
// an element none of whose keys names a block field is not decoded. The
// control: a conversation of every kind of block translates as before, and
// content that does not decode is refused as before.
func TestAnthropicBlocksAllocateInProportionToTheBody(t *testing.T) {
	empty := strings.TrimSuffix(strings.Repeat("{},", 6000), ",")
	for _, c := range []struct{ name, body string }{
		{"a message of 6,000 empty blocks", `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":[` + empty + `]}]}`},
		{"a system prompt of 6,000 empty blocks", `{"model":"m","max_tokens":8,"system":[` + empty + `],"messages":[{"role":"user","content":"hi"}]}`},
	} {
		body := []byte(c.body)
		got := testbin.Allocated(func() {
			if _, err := New(Anthropic).Decode(nil, body); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%s, %d KB: %d KiB allocated", c.name, len(body)>>10, got>>10)
		if got > 8*uint64(len(body)) {
			t.Errorf("%s, %d KB: %d KiB allocated (over 8× the body)", c.name, len(body)>>10, got>>10)
		}
	}

	body := `{"model":"m","max_tokens":8,"system":[{"type":"text","text":"sys"},{}],"messages":[` +
		`{"role":"user","content":[{},{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}},{"type":"other","text":"no"},null]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"Type":"text","text":"ok"},{"type":"tool_use","id":"u","name":"f","input":{"a": 1}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"u","content":[{"type":"text","text":"r"},{}]},{"x":1}]}]}`
	req, err := New(Anthropic).Decode(nil, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(req.Chat.Messages)
	want := `[{"content":"sys","role":"system"},{"content":[{"text":"look","type":"text"},{"image_url":{"url":"data:image/png;base64,AA"},"type":"image_url"}],"role":"user"},` +
		`{"content":"ok","reasoning_content":"hm","role":"assistant","tool_calls":[{"function":{"arguments":"{\"a\":1}","name":"f"},"id":"u","type":"function"}]},` +
		`{"content":"r","role":"tool","tool_call_id":"u"}]`
	if string(got) != want {
		t.Errorf("messages:\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{`[1]`, `[{"type":1}]`, `[{},{"text":[]}]`, `{}`} {
		_, err := New(Anthropic).Decode(nil, []byte(`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":`+bad+`}]}`))
		if err == nil || !strings.Contains(err.Error(), "content must be a string or a list of blocks") {
			t.Errorf("content %s: %v", bad, err)
		}
	}
}

// TestAnthropicLeavesOutBlocksOfOtherShapes: a block of a kind the
// translation does not read is left out whatever its shape: a
// search_result block (its source a string, where an image's is an
// object) made the whole request "content must be a string or a list of
// blocks". The control: an image block whose source is a string is still
// refused.
func TestAnthropicLeavesOutBlocksOfOtherShapes(t *testing.T) {
	sr := `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":[{"type":"search_result","source":"https://example.com/a","title":"a","content":[{"type":"text","text":"x"}]},{"type":"text","text":"q"}]}]}`
	req, err := New(Anthropic).Decode(nil, []byte(sr))
	if err != nil {
		t.Fatalf("a search_result block: %v", err)
	}
	if got, _ := json.Marshal(req.Chat.Messages); string(got) != `[{"content":[{"text":"q","type":"text"}],"role":"user"}]` && string(got) != `[{"content":"q","role":"user"}]` {
		t.Errorf("messages %s, want the text alone", got)
	}
	bad := `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":[{"type":"image","source":"https://x"}]}]}`
	if _, err := New(Anthropic).Decode(nil, []byte(bad)); err == nil {
		t.Error("control: an image block whose source is a string was taken")
	}
}
