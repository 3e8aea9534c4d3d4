package oneshot

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
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
