package streamjson

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// blockLine is a stream-json line of typ whose message content is n
// copies of elem.
func blockLine(typ, elem string, n int) []byte {
	return []byte(`{"type":"` + typ + `","message":{"role":"` + typ + `","content":[` + strings.Repeat(elem+",", n-1) + elem + `]}}`)
}

// Message content was decoded whole into a []block, a 170-byte struct and
// a reflective decode of each element however small: a line of 65,000
// empty blocks ({},, 195 KB, within adapterkit.MaxLineValues) allocated
// 47 MiB (250× the line), 19,500 blocks of an empty id 14 MiB (75×), a
// tool_result's content of empty blocks 48 MiB (258×). The blocks are now
// read one at a time, those of plain keys and values without reflection,
// and only the kinds the line maps are kept: 2× the line (8× for the
// tool_result, whose text names each block). The control: every kind of
// block maps as before, by the fast path or the full decode.
func TestContentBlocksAllocateInProportionToTheLine(t *testing.T) {
	log := adapterkit.NewLogLimit(slog.New(slog.DiscardHandler))
	newMapper := func(emit func(wire.Event)) *mapper {
		return &mapper{a: &Adapter{log: log}, ctx: context.Background(), emit: emit,
			names: map[string]string{}, extra: map[string]any{}}
	}
	for _, c := range []struct {
		name  string
		line  []byte
		bound uint64 // times the line
	}{
		{"assistant, 65,000 empty blocks", blockLine("assistant", "{}", 65000), 5},
		{"user, 65,000 empty blocks", blockLine("user", "{}", 65000), 5},
		{"assistant, 19,500 blocks of an empty id", blockLine("assistant", `{"id":""}`, 19500), 5},
		{"a tool_result of 65,000 empty blocks", blockLine("user", `{"type":"tool_result","tool_use_id":"t","content":[`+strings.Repeat("{},", 64999)+`{}]}`, 1), 16},
	} {
		m := newMapper(func(wire.Event) {})
		got := testbin.Allocated(func() {
			if _, _, err := m.handle(c.line, false); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		})
		t.Logf("%s, %d KB: %d KiB allocated", c.name, len(c.line)>>10, got>>10)
		if got > c.bound*uint64(len(c.line)) {
			t.Errorf("%s, %d KB: %d KiB allocated (over %d× the line)", c.name, len(c.line)>>10, got>>10, c.bound)
		}
	}

	var evs []string
	m := newMapper(func(e wire.Event) { evs = append(evs, fmt.Sprintf("%T %+v", e.Data, e.Data)) })
	line := `{"type":"assistant","message":{"content":[{},{"type":"thinking","thinking":"t"},null,{"type":"text","text":"a\"b"},` +
		`{"type":"tool_use","id":"u","name":"n","input":{"x": 1}},{"Type":"text","text":"folded"},{"type":"image","text":"no"}]}}`
	if _, _, err := m.handle([]byte(line), false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.handle([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"u","content":[{"type":"text","text":"x"},{}],"is_error":true},{"type":"text","text":"no"}]}}`), false); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`*wire.LLMChunk &{Content:t Index:1 Thought:true `,
		`*wire.TextOutput &{Text:a"b Extra:map[]}`,
		`*wire.ToolCall &{ToolName:n Arguments:[123 34 120 34 58 49 125] CallID:u `,
		`*wire.TextOutput &{Text:folded Extra:map[]}`,
		`*wire.ToolResult &{ToolName:n Result:x
[] Error:0x`,
	}
	if len(evs) != len(want) {
		t.Fatalf("events %q, want %d", evs, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(evs[i], w) {
			t.Errorf("event %d: %q, want %q", i, evs[i], w)
		}
	}
	for _, bad := range []string{`[{"id":0}]`, `[{},1]`, `{}`} {
		_, _, err := newMapper(func(wire.Event) {}).handle([]byte(`{"type":"assistant","message":{"content":`+bad+`}}`), false)
		if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureProtocol || !strings.Contains(f.Message, "neither a string nor a content-block array") {
			t.Errorf("content %s: %v, want a protocol error", bad, err)
		}
	}
}
