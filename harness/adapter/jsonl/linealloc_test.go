package jsonl

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// A turn_complete's extra fields became TurnResult.Extra decoded into Go
// values: a 4 MiB line (the line limit) of [0,0,...] under one key, or
// under many keys of 32 KiB each, allocated 160 MiB. They are decoded up to
// wire.PlainLimit in all and kept raw beyond. The control: a line of the
// same size whose extra is a string allocates about its size, and small
// extra values still decode into plain values.
func TestTurnCompleteExtraAllocatesInProportionToTheLine(t *testing.T) {
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
		var res map[string]any
		got := testbin.Allocated(func() {
			r, done, err := (&Adapter{}).handleLine(line, func(wire.Event) {})
			if err != nil || !done {
				t.Fatalf("%s: %v", c.name, err)
			}
			res = r.Extra
		})
		t.Logf("a turn_complete of %d MiB with %s allocated %d MiB", len(line)>>20, c.name, got>>20)
		if got > 4*uint64(len(line)) {
			t.Errorf("a turn_complete of %d MiB with %s allocated %d MiB (over 4× the line)", len(line)>>20, c.name, got>>20)
		}
		if b, err := json.Marshal(res); err != nil || len(b) < size {
			t.Errorf("%s: the extra values do not encode back: %d bytes, %v", c.name, len(b), err)
		}
	}
	res, _, err := (&Adapter{}).handleLine([]byte(`{"type":"turn_complete","data":{"response":"r","cost":0.5,"usage":{"in":3},"none":null}}`), nil)
	if u, _ := res.Extra["usage"].(map[string]any); err != nil || res.Extra["cost"] != 0.5 || u["in"] != 3.0 {
		t.Errorf("small extra values are not decoded: %#v %v", res.Extra, err)
	}
	if v, ok := res.Extra["none"]; !ok || v != nil {
		t.Errorf("a null extra value: %#v", res.Extra["none"])
	}
}
