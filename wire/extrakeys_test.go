package wire_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// An event's fields beyond its schema (Extra) are kept as a map entry each,
// whatever their size on the line: 4 MiB of {"k1":0,"k2":0,...} was kept
// at 27 times its size with the event. More than wire.MaxExtraKeys is now
// refused as the event's error; the control is that a few are kept.
func TestExtraKeysAreBounded(t *testing.T) {
	fields := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"text":"hi"`)
		for i := range n {
			fmt.Fprintf(&b, `,"k%d":0`, i)
		}
		b.WriteString("}")
		return []byte(b.String())
	}
	few, err := wire.DecodeChecked(wire.EventTextOutput, fields(3))
	if err != nil {
		t.Fatalf("3 fields of its own: %v", err)
	}
	if x := few.(*wire.TextOutput).Extra; len(x) != 3 {
		t.Errorf("3 fields of its own kept %d: %v", len(x), x)
	}
	if _, err := wire.DecodeChecked(wire.EventTextOutput, fields(wire.MaxExtraKeys)); err != nil {
		t.Errorf("%d fields of its own: %v", wire.MaxExtraKeys, err)
	}
	flood := fields(400_000) // 4 MiB
	var err2 error
	got := testbin.Allocated(func() { _, err2 = wire.DecodeChecked(wire.EventTextOutput, flood) })
	t.Logf("%d MiB of fields of its own: %v; %d MiB allocated", len(flood)>>20, err2, got>>20)
	if err2 == nil || !strings.Contains(err2.Error(), "fields beyond the event's schema") {
		t.Errorf("400,000 fields of its own: %v, want refused", err2)
	}
	if got > 16<<20 {
		t.Errorf("400,000 fields of its own allocated %d MiB", got>>20)
	}
	escaped := strings.ReplaceAll(string(fields(400_000)), `"k`, `"\u006b`)
	if _, err := wire.DecodeChecked(wire.EventTextOutput, []byte(escaped)); err == nil {
		t.Error("400,000 fields of its own with escaped names were kept")
	}
}
