package acp

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// A tool call's content was decoded whole into a slice of structs, one of
// each item however small: an update of 65,000 empty items ({},, 195 KB,
// within adapterkit.MaxLineValues) allocated 16 MiB (86× the update). The
// items are now scanned for their type and only those of type "content"
// decoded. The control: the result is the same text, raw content or
// rawOutput as before, for each shape.
func TestToolContentAllocatesInProportionToTheUpdate(t *testing.T) {
	log := adapterkit.NewLogLimit(slog.New(slog.DiscardHandler))
	params := []byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","status":"completed","content":[` +
		strings.Repeat("{},", 64999) + `{}]}}`)
	ts := newTurnState(func(wire.Event) {}, log, "s", map[string]*toolCall{})
	got := testbin.Allocated(func() { ts.notify("session/update", params) })
	t.Logf("an update of 65,000 empty content items, %d KB: %d KiB allocated", len(params)>>10, got>>10)
	if got > 6*uint64(len(params)) {
		t.Errorf("an update of 65,000 empty content items, %d KB: %d KiB allocated (over 6× the update)", len(params)>>10, got>>10)
	}

	for _, c := range []struct{ content, raw, want string }{
		{`[{"type":"content","content":{"type":"text","text":"a"}},{"type":"diff","path":"p"},{"type":"content","content":{"type":"text","text":"b\"c"}}]`, ``, `a` + "\n" + `b"c`},
		{`[{"Type":"content","content":{"type":"text","text":"folded"}}]`, ``, `folded`},
		{`[{"type":"content","content":{"type":"text","text":"a"}},0]`, `"out"`, `out`},
		{`[{"type":"diff"},null]`, ``, `[map[type:diff] <nil>]`},
		{`[{"type":"content","content":{"type":"text","text":"a"}},1]`, ``, `[map[content:map[text:a type:text] type:content] 1]`},
		{`{"type":"content"}`, `{"x":1}`, `map[x:1]`},
		{`[]`, ``, ``},
	} {
		content := []byte(c.content)
		var raw []byte
		if c.raw != "" {
			raw = []byte(c.raw)
		}
		res, _ := toolOutput(content, raw)
		if got := fmt.Sprint(res); got != c.want {
			t.Errorf("content %s, rawOutput %s: %q, want %q", c.content, c.raw, got, c.want)
		}
	}
}
