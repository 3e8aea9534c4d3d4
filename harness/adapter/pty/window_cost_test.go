package pty

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// Tiny writes do not cost the whole window: the turn loop copied the
// unsettled rows above the cursor per chunk of terminal output (Window,
// twice with settle, and compared it with the last copy), so a harness that
// fills the window with long rows once (40 rows of 60 KB: 2.4 MB of its
// output limit), keeps it from settling by changing one character now and
// then, and otherwise writes one byte at a time made the daemon copy
// megabytes per byte: 2.6 MiB of output, 1.4 GiB allocated in 8 s (red
// team round 7). Now the rows are looked at only when the terminal changed
// (vt's generation) and copied for settle at most twice a period, whatever
// the harness writes. The control, rows settling within a turn while a
// spinner keeps the cursor's row busy, is TestTUIEmitsWithinTheTurn.
func TestTinyWritesDoNotCostTheWholeWindow(t *testing.T) {
	script := `printf 'ready> '; read line
row=$(head -c 60000 /dev/zero | tr '\0' x)
for i in $(seq 40); do printf '%s\r\n' "$row"; done
c=y
while :; do
  printf '\033[A%s\033[B\r' $c; if [ $c = y ]; then c=z; else c=y; fi
  for j in $(seq 300); do printf '\a'; done
done`
	a := start(t, launch(t, map[string]any{"prompt": `^ready> $`, "rows": 40}, nil, "bash", "--norc", "--noprofile", "-c", script))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out0 := a.Process().OutputBytes()
	_, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "go", OutputLimit: 16 << 20}, func(wire.Event) {})
	runtime.ReadMemStats(&after)
	out := a.Process().OutputBytes() - out0
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("turn: %v; harness wrote %d KiB, the daemon allocated %d MiB", err, out>>10, alloc>>20)
	if alloc > 64*uint64(out)+64<<20 {
		t.Fatalf("%d KiB of harness output made the daemon allocate %d MiB (%dx)", out>>10, alloc>>20, alloc/uint64(out))
	}
}
