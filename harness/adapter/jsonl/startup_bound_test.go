package jsonl

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// flood is a shell command printing n bytes of 4 KiB lines.
func flood(n int) string {
	return `yes "$(head -c 4095 /dev/zero | tr '\0' x)" | head -c ` + strconv.Itoa(n)
}

// wantOutputBound fails t unless err is a failure of type typ naming the
// output limit's knob.
func wantOutputBound(t *testing.T, err error, typ wire.FailureType) {
	t.Helper()
	f, ok := harness.AsFailure(err)
	if !ok || f.Type != typ || !strings.Contains(f.Message, "episode.output_limit") {
		t.Fatalf("got %v, want a failure of type %s naming episode.output_limit", err, typ)
	}
}

// Output before ready is bounded in bytes by the output limit, as a turn's
// is: 40 MiB printed before {"type":"ready"} was 40 MiB of daemon heap
// held from start-up to the first turn (red team round 7); past the limit
// (16 MiB by default) start-up fails, naming episode.output_limit. Below
// it, what the harness printed reaches the first turn.
func TestOutputBeforeReadyIsBoundedByTheOutputLimit(t *testing.T) {
	const n = 40 << 20
	l := adaptertest.Launch(t, "sh", "-c", flood(n)+`; echo '{"type":"ready"}'; exec cat >/dev/null`)
	base := testbin.LiveHeap()
	a := New()
	err := a.Start(context.Background(), l)
	defer a.Stop(context.Background())
	held := int64(testbin.LiveHeap()) - int64(base)
	t.Logf("start: %v; heap after start grew by %d MiB", err, held>>20)
	wantOutputBound(t, err, wire.FailureStartupFailed)
	if held > n/4 {
		t.Errorf("the daemon holds %d MiB of the harness's %d MiB before ready", held>>20, n>>20)
	}
	runtime.KeepAlive(a)

	// The control: 512 KiB before ready, within a 1 MiB limit.
	l = adaptertest.Launch(t, "sh", "-c", flood(512<<10)+`; echo '{"type":"ready"}'
read m; echo '{"type":"turn_complete","data":{"response":"ok"}}'; exec cat >/dev/null`)
	l.OutputLimit = 1 << 20
	a = New()
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatalf("512 KiB before ready within a 1 MiB limit: %v", err)
	}
	defer a.Stop(context.Background())
	res, ev, err := turn(t, a, 1, "hi")
	if err != nil || res.Response != "ok" || len(ev.OfType(wire.EventTextOutput)) != 128 {
		t.Fatalf("first turn: %+v %v, %d text events, want 128 lines of early output", res, err, len(ev.OfType(wire.EventTextOutput)))
	}
}

// What a harness writes between turns while it is asked to fork, or while a
// sibling's is asked to restore, is kept for the next turn: at most 1,024
// lines, and (as start-up output) at most the output limit's bytes, so 2 MiB
// of noise against a 1 MiB limit ends the fork (output_limit) or the
// sibling's start (startup_failed) naming episode.output_limit; 1,024 lines
// of up to max_line_bytes each were up to 4 GiB. The control, noise within
// the bound, is TestForkKeepsOutputForTheNextTurn.
func TestForkNoiseIsBoundedByTheOutputLimit(t *testing.T) {
	noisy := func(answer string) string {
		return `echo '{"type":"ready"}'; read m; ` + flood(2<<20) + `; echo '` + answer + `'; exec cat >/dev/null`
	}
	t.Run("fork", func(t *testing.T) {
		l := adaptertest.Launch(t, "sh", "-c", noisy(`{"type":"fork_state","state":{}}`))
		l.OutputLimit = 1 << 20
		a := New()
		if err := a.Start(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		defer a.Stop(context.Background())
		_, err := forkState(t, a)
		wantOutputBound(t, err, wire.FailureOutputLimit)
	})
	t.Run("restore", func(t *testing.T) {
		l := adaptertest.Launch(t, "sh", "-c", noisy(`{"type":"restored"}`))
		l.OutputLimit = 1 << 20
		l.Fork = &harness.ForkState{Mechanism: harness.ForkLine, Data: json.RawMessage(`{}`)}
		a := New()
		err := a.Start(context.Background(), l)
		defer a.Stop(context.Background())
		wantOutputBound(t, err, wire.FailureStartupFailed)
	})
}
