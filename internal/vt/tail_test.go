package vt

import (
	"runtime"
	"strings"
	"testing"
)

// BeforeCursorTail is BeforeCursor's last n characters, padding included,
// on short and long lines and with the cursor past the text; and it costs
// n, not the line's length: on a 60,000-character line 1,000 calls for 512
// characters allocate well under what one BeforeCursor of the line does
// (the control: BeforeCursor's own allocation is the line's length).
func TestBeforeCursorTailIsTheTailAndCostsItsLength(t *testing.T) {
	for _, c := range []struct {
		write string
		n     int
	}{
		{"short", 512}, {"ready> ", 3}, {strings.Repeat("x", 2000) + "> ", 512}, {"ab\x1b[10Gc", 4}, {"ab\x1b[10G", 3},
	} {
		var term Text
		term.SetSize(24, 80)
		term.Write([]byte(c.write))
		full := []rune(term.BeforeCursor())
		want := string(full[max(len(full)-c.n, 0):])
		if got := term.BeforeCursorTail(c.n); got != want {
			t.Errorf("%q, tail %d: %q, want %q", c.write, c.n, got, want)
		}
	}
	var term Text
	term.Write([]byte(strings.Repeat("x", 60000)))
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	full := term.BeforeCursor()
	runtime.ReadMemStats(&b)
	one := b.TotalAlloc - a.TotalAlloc
	if len(full) != 60000 || one < 60000 {
		t.Fatalf("the control: BeforeCursor of a 60,000-character line is %d characters, allocating %d bytes", len(full), one)
	}
	runtime.ReadMemStats(&a)
	for range 1000 {
		if s := term.BeforeCursorTail(512); len(s) != 512 {
			t.Fatalf("tail of %d characters", len(s))
		}
	}
	runtime.ReadMemStats(&b)
	if per := (b.TotalAlloc - a.TotalAlloc) / 1000; per > 2048 {
		t.Errorf("BeforeCursorTail(512) of a 60,000-character line allocates %d bytes per call", per)
	}
}
