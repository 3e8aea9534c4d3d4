package vt

import (
	"runtime"
	"strings"
	"testing"
)

// textBytes is the size of what t gives out for its input: settled rows,
// the window and the cursor's row.
func textBytes(tx *Text) int {
	n := 0
	for _, l := range tx.TakeLines() {
		n += len(l) + 1
	}
	for _, l := range tx.Window() {
		n += len(l) + 1
	}
	return n + len(tx.Pending())
}

// TestCursorMovesDoNotAmplify: a cursor move to a far column costs the
// program a few bytes; the text the emulator makes of it (rows padded with
// blanks up to the cursor) must stay within a small multiple of the input,
// or a harness turns its per-turn output limit (bytes written) into
// gigabytes of daemon memory (early text before ready, the turn's
// response, the stderr tail's vt.Strip). Red team round 7.
func TestCursorMovesDoNotAmplify(t *testing.T) {
	const rows = 200
	for _, tc := range []struct{ name, unit string }{
		{"CHA", "\x1b[65536Gx\n"},
		{"CUF", "\x1b[65535Cx\r\n"},
		{"CUP", "\x1b[24;65536Hx\n"},
		{"HPA", "\x1b[65536`x\n"},
		{"ICH", "x\x1b[D\x1b[65536@\n"},
		{"no newline (wrap at MaxLine)", "\x1b[65536Gxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tx Text
			tx.SetSize(24, 80)
			in := strings.Repeat(tc.unit, rows)
			tx.WriteString(in)
			tx.Settle()
			if out := textBytes(&tx); out > 64*len(in) {
				t.Fatalf("%d bytes of input became %d bytes of text (%dx)", len(in), out, out/len(in))
			}
		})
	}
	// Strip, which the pty adapter applies to its 16 KiB terminal tail
	// (harness.Adapter.Diagnostics: every failure's stderr_tail).
	in := strings.Repeat("\x1b[65536Gx\n", 16<<10/10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out := len(Strip(in))
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; out > 64*len(in) || alloc > 64<<20 {
		t.Fatalf("Strip: %d bytes of input became %d bytes of text (%dx), allocating %d MiB", len(in), out, out/len(in), alloc>>20)
	}
}

// TestPositiveControlLongRowsOfText: rows of real text stay as long as they
// were written (up to MaxLine), whatever the width: text is not wrapped.
func TestPositiveControlLongRowsOfText(t *testing.T) {
	var tx Text
	tx.SetSize(24, 80)
	tx.WriteString(strings.Repeat("y", 5000) + "\n")
	tx.Settle()
	if l := tx.TakeLines(); len(l) != 1 || len(l[0]) != 5000 {
		t.Fatalf("lines %d", len(l))
	}
}
