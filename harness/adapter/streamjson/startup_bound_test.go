package streamjson

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// noisyInitialize is an agent that prints lines lines of size bytes before
// it answers initialize.
func noisyInitialize(lines, size int) string {
	return `read l; id=$(printf '%s' "$l" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
row=$(head -c ` + strconv.Itoa(size) + ` /dev/zero | tr '\0' x)
for i in $(seq ` + strconv.Itoa(lines) + `); do printf '%s\n' "$row"; done
printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id"
exec cat >/dev/null`
}

// The lines an agent prints before it answers initialize are kept for the
// first turn: at most maxEarlyLines (1024) of them, and at most the output
// limit's bytes, as a turn's output (each line may be as long as the line
// limit, so the count alone allowed 4 GiB: 40 lines of 1 MB were 38 MiB of
// daemon heap held from start-up to the first turn; red team round 7). Past
// the limit (16 MiB by default) start-up fails, naming
// episode.output_limit; the control, 40 lines of 8 KB within a 1 MiB
// limit, starts with the 40 lines kept.
func TestOutputBeforeInitializeIsBoundedByTheOutputLimit(t *testing.T) {
	l := adaptertest.Launch(t, "bash", "-c", noisyInitialize(40, 1000000))
	base := testbin.LiveHeap()
	a := New()
	err := a.Start(context.Background(), l)
	defer a.Stop(context.Background())
	held := int64(testbin.LiveHeap()) - int64(base)
	t.Logf("start: %v; heap after start grew by %d MiB", err, held>>20)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "episode.output_limit") {
		t.Fatalf("40 MB before initialize's answer: %v, want startup_failed naming episode.output_limit", err)
	}
	if held > 16<<20 {
		t.Errorf("40 MB printed before initialize's answer is held by the daemon (%d MiB)", held>>20)
	}
	runtime.KeepAlive(a)

	l = adaptertest.Launch(t, "bash", "-c", noisyInitialize(40, 8000))
	l.OutputLimit = 1 << 20
	a = New()
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatalf("320 KB before initialize's answer within a 1 MiB limit: %v", err)
	}
	defer a.Stop(context.Background())
	if a.mu.Lock(); len(a.early) != 40 {
		t.Errorf("%d lines kept for the first turn, want 40", len(a.early))
	}
	a.mu.Unlock()
}
