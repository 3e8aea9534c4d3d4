package streamjson

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// system/init's lists were decoded whole, tools into a []string and
// mcp_servers into a slice of structs and then a map per server: a line of
// 65,000 empty objects (195 KB, within adapterkit.MaxLineValues) allocated
// 10 MiB as tools (55× the line, to be found unreadable) and 32 MiB as
// servers (172×). Each element is now decoded by itself into a list sized
// once, a server into a 32-byte struct: 6× and 22×. The control: what the
// Extra keeps (the same JSON) and the event of a server that failed are as
// before, and a list that does not decode leaves the line unread.
func TestInitListsAllocateInProportionToTheLine(t *testing.T) {
	log := adapterkit.NewLogLimit(slog.New(slog.DiscardHandler))
	newMapper := func(emit func(wire.Event)) *mapper {
		return &mapper{a: &Adapter{log: log}, ctx: context.Background(), emit: emit, server: "env",
			names: map[string]string{}, extra: map[string]any{}}
	}
	empty := "[" + strings.Repeat("{},", 64999) + "{}]"
	for _, c := range []struct {
		name, line string
		bound      uint64 // times the line
	}{
		{"tools", `{"type":"system","subtype":"init","tools":` + empty + `}`, 12},
		{"mcp_servers", `{"type":"system","subtype":"init","mcp_servers":` + empty + `}`, 48},
	} {
		m := newMapper(func(wire.Event) {})
		line := []byte(c.line)
		got := testbin.Allocated(func() { m.handle(line, false) })
		t.Logf("%s of 65,000 empty objects, %d KB: %d KiB allocated", c.name, len(line)>>10, got>>10)
		if got > c.bound*uint64(len(line)) {
			t.Errorf("%s of 65,000 empty objects, %d KB: %d KiB allocated (over %d× the line)", c.name, len(line)>>10, got>>10, c.bound)
		}
	}

	var evs []string
	m := newMapper(func(e wire.Event) { evs = append(evs, fmt.Sprint(e.Data)) })
	m.handle([]byte(`{"type":"system","subtype":"init","session_id":"s","tools":["Bash","mcp__env__a\u0064d",null],`+
		`"mcp_servers":[{"name":"env","status":"failed"},{"Name":"x","status":"ok","other":1},null]}`), false)
	if got := fmt.Sprint(m.extra["tools"], m.extra["mcp_servers"], m.extra["session_id"]); got != "[Bash mcp__env__add ] [{env failed} {x ok} { }]s" {
		t.Errorf("the extra: %s", got)
	}
	if len(evs) != 1 || !strings.Contains(evs[0], `"env" is failed`) {
		t.Errorf("events %q, want the failed server's", evs)
	}
	for _, bad := range []string{`"tools":[1]`, `"tools":{}`, `"mcp_servers":[1]`, `"mcp_servers":[{"name":1}]`, `"mcp_servers":"x"`} {
		m := newMapper(func(wire.Event) {})
		m.handle([]byte(`{"type":"system","subtype":"init","session_id":"s",`+bad+`}`), false)
		if len(m.extra) != 0 {
			t.Errorf("%s: the line is read: %v", bad, m.extra)
		}
	}
}
