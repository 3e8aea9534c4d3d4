package oneshot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// The jsonl format's turn_complete extra fields were decoded into Go values:
// a 4 MiB line of [0,0,...], under one key or under 128, allocated 150-170
// MiB. They are decoded up to wire.PlainLimit in all and kept raw beyond.
// The control: a line of the same size whose extra is a string, and small
// extra values decoded as before.
func TestJSONLExtraAllocatesInProportionToTheLine(t *testing.T) {
	const size = 4 << 20
	var many strings.Builder
	for i := 0; many.Len() < size; i++ {
		fmt.Fprintf(&many, `,"k%d":%s`, i, testbin.JSONZeros(32<<10))
	}
	for _, c := range []struct{ name, extra string }{
		{"a string", `,"pad":"` + strings.Repeat("a", size) + `"`},
		{"one array of zeros", `,"pad":` + testbin.JSONZeros(size)},
		{"128 arrays of zeros", many.String()},
	} {
		line := []byte(`{"type":"turn_complete","data":{"response":"r","done":true` + c.extra + `}}`)
		p := &jsonlParser{}
		var extra map[string]any
		got := testbin.Allocated(func() {
			if err := p.line(line, func(wire.Event) {}); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			_, _, extra = p.result(nil)
		})
		t.Logf("a turn_complete of %d MiB with %s allocated %d MiB", len(line)>>20, c.name, got>>20)
		if got > 4*uint64(len(line)) || len(extra) == 0 {
			t.Errorf("a turn_complete of %d MiB with %s allocated %d MiB (over 4× the line), %d extra values", len(line)>>20, c.name, got>>20, len(extra))
		}
	}
	p := &jsonlParser{}
	if err := p.line([]byte(`{"type":"turn_complete","data":{"response":"r","cost":0.5,"usage":{"in":3},"none":null}}`), func(wire.Event) {}); err != nil {
		t.Fatal(err)
	}
	_, _, extra := p.result(nil)
	if u, _ := extra["usage"].(map[string]any); extra["cost"] != 0.5 || u["in"] != 3.0 {
		t.Errorf("small extra values are not decoded: %#v", extra)
	}
	if v, ok := extra["none"]; !ok || v != nil {
		t.Errorf("a null extra value: %#v", extra["none"])
	}
}
