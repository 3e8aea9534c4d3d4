package oneshot

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// printLines is a one-shot harness that prints line n times and exits.
func printLines(t *testing.T, format, line string, n int) *Adapter {
	t.Helper()
	script := fmt.Sprintf(`yes '%s' | head -n %d`, line, n)
	cmd := []string{"sh", "-c", script, "sh", PhMessage}
	return start(t, launch(t, map[string]any{"format": format, "command": cmd}, "unused"))
}

// floodTurn runs one turn under the default output limit, discarding its
// events, and returns the bytes the daemon allocated meanwhile.
func floodTurn(t *testing.T, a *Adapter) (res harness.TurnResult, events int, allocated uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "go", OutputLimit: 16 << 20}, func(wire.Event) { events++ })
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	return res, events, after.TotalAlloc - before.TotalAlloc
}

// TestGeminiDeltasJoinInLinearTime: the gemini format's assistant deltas
// (message lines with "delta": true) are joined into one text_output when
// a tool call or the turn's end closes them; the join added one delta at a
// time to a growing string, so the daemon copied the text once per delta:
// N deltas of c bytes cost N²c/2 bytes allocated and copied. Within the
// 16 MiB output limit of one turn, deltas of 60 bytes (134,000 lines of
// 125 bytes, 8 MB of text) cost some 540 GB of copying: minutes of the
// daemon's CPU on a goroutine nothing interrupts (2 s per 3 GB here), from
// one harness's one turn.
//
// Measured here before the fix, 10,000 deltas of 60 bytes (1.25 MB of
// output): 3.06 GB allocated, 168× the 18 MB of the same lines without
// "delta" (the control: each a text_output of its own, no join).
func TestGeminiDeltasJoinInLinearTime(t *testing.T) {
	const n = 10_000
	content := strings.Repeat("x", 60)
	line := func(delta bool) string {
		return fmt.Sprintf(`{"type":"message","role":"assistant","content":"%s","delta":%v}`, content, delta)
	}
	_, events, control := floodTurn(t, printLines(t, FormatGemini, line(false), n))
	t.Logf("control: %d whole messages: %d events, %d bytes allocated", n, events, control)
	if events < n {
		t.Fatalf("control: %d events of %d lines: the harness's lines did not arrive", events, n)
	}
	res, events, attack := floodTurn(t, printLines(t, FormatGemini, line(true), n))
	t.Logf("attack: %d deltas: %d events, %d bytes allocated, response %d bytes", n, events, attack, len(res.Response))
	if len(res.Response) != n*len(content) {
		t.Fatalf("response of %d bytes, want %d", len(res.Response), n*len(content))
	}
	if attack > 4*control+(16<<20) {
		t.Errorf("%d deltas of %d bytes allocated %d bytes (%d× the %d of whole messages): the join is quadratic",
			n, len(content), attack, attack/max(control, 1), control)
	}
}

// floodPeak runs one turn under the default output limit, discarding its
// events, and returns the most live heap (after a collection) seen at
// sixteen points of the turn, over the heap before it.
func floodPeak(t *testing.T, a *Adapter, lines int) (res harness.TurnResult, events int, peak uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := testbin.LiveHeap()
	every := max(lines/16, 1)
	res, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "go", OutputLimit: 16 << 20}, func(wire.Event) {
		if events++; events%every == 0 {
			if h := testbin.LiveHeap(); h > base {
				peak = max(peak, h-base)
			}
		}
	})
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	return res, events, peak
}

// TestTextFormatsHoldTheirOutputNotTheirLines: the text format keeps
// every line of the turn for its response (joined at the end), one string
// each, and the jsonl format every line that is not JSON; a line of one
// byte ("\n") is a 16-byte string header in that slice, so a turn's output
// within the 16 MiB output limit held up to 16 times its size (and the
// slice's growth copies on top): 16 MiB of empty lines, 268 MB live per
// turn and half again while the slice grows, against the design's ~64 MiB
// per flooding turn.
//
// Measured here before the fix, 4 MiB of output: as 1,024 lines of 4 KiB
// (the control) the text turn held at most 5.0 MB; as 4,194,304 empty
// lines, 67.9 MB; the jsonl turn as 2,097,152 lines "a", 34.8 MB.
func TestTextFormatsHoldTheirOutputNotTheirLines(t *testing.T) {
	const out = 4 << 20
	long := strings.Repeat("x", 4095)
	_, events, control := floodPeak(t, printLines(t, FormatText, long, out/4096), out/4096)
	t.Logf("control: %d lines of 4 KiB: %d events, at most %d bytes held", out/4096, events, control)
	if events != out/4096 || control < out/2 {
		t.Fatalf("control: %d events, %d bytes held: the turn's lines are not what was measured", events, control)
	}
	for _, c := range []struct{ format, line string }{{FormatText, ""}, {FormatJSONL, "a"}} {
		n := out / (len(c.line) + 1)
		res, events, attack := floodPeak(t, printLines(t, c.format, c.line, n), n)
		t.Logf("%s: %d lines %q: %d events, at most %d bytes held, response %d bytes", c.format, n, c.line, events, attack, len(res.Response))
		if events != n {
			t.Fatalf("%s: %d events of %d lines", c.format, events, n)
		}
		if attack > 2*control+(4<<20) {
			t.Errorf("%s: %d bytes of output as lines %q held %d bytes (%d as 4 KiB lines): the format keeps a string per line",
				c.format, out, c.line, attack, control)
		}
	}
}
