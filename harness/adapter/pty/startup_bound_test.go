package pty

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// The rows a program prints before its prompt are kept for the first turn,
// bounded by the output limit as a turn's output is: 24 MB before the
// prompt was 34 MiB of daemon heap (red team round 7). Past the limit
// (16 MiB by default) start-up fails, naming episode.output_limit; so does
// a program whose rows come to more than the limit though it wrote less
// (a cursor move to the last column is a few bytes, the row it pads is the
// terminal's width). The control, 600 KB of rows within a 1 MiB limit,
// starts with those rows kept.
func TestOutputBeforeReadyIsBoundedByTheOutputLimit(t *testing.T) {
	const rows = `row=$(head -c 60000 /dev/zero | tr '\0' x)
for i in $(seq %d); do printf '%%s\n' "$row"; done
printf 'ready> '; exec cat >/dev/null`
	startFails := func(t *testing.T, l *harness.Launch) {
		t.Helper()
		base := testbin.LiveHeap()
		a := New()
		err := a.Start(context.Background(), l)
		defer a.Stop(context.Background())
		held := int64(testbin.LiveHeap()) - int64(base)
		t.Logf("start: %.200v; heap after start grew by %d MiB", err, held>>20)
		if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "episode.output_limit") {
			t.Fatalf("got %.300v, want startup_failed naming episode.output_limit", err)
		}
		if held > 12<<20 {
			t.Errorf("the daemon holds %d MiB of what the program printed before ready", held>>20)
		}
		runtime.KeepAlive(a)
	}
	t.Run("bytes", func(t *testing.T) {
		startFails(t, launch(t, map[string]any{"prompt": `^ready> $`}, nil, "bash", "--norc", "--noprofile", "-c", fmt.Sprintf(rows, 400)))
	})
	t.Run("rows", func(t *testing.T) {
		// 10,000 rows of 120 columns (1.2 MB) from 110 KB.
		l := launch(t, map[string]any{"prompt": `^ready> $`}, nil, "bash", "--norc", "--noprofile", "-c",
			`for i in $(seq 10000); do printf '\033[119Cx\n'; done; printf 'ready> '; exec cat >/dev/null`)
		l.OutputLimit = 1 << 20
		startFails(t, l)
	})
	t.Run("control", func(t *testing.T) {
		l := launch(t, map[string]any{"prompt": `^ready> $`}, nil, "bash", "--norc", "--noprofile", "-c", fmt.Sprintf(rows, 10))
		l.OutputLimit = 1 << 20
		a := start(t, l)
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.early) != 1 || strings.Count(a.early[0].Data.(*wire.TextOutput).Text, "\n") != 9 {
			t.Errorf("kept for the first turn: %.200v, want the 10 rows", a.early)
		}
	})
}
