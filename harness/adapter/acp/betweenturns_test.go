package acp

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// chattyAgent answers initialize, session/new and two prompts; after the
// first prompt's response it prints 48 non-JSON lines of 1 MB that belong
// to no call, then creates the file mark.
func chattyAgent(mark string) string {
	return `read l; printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}\n'
read l; printf '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}\n'
read l; printf '{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}\n'
row=$(head -c 1000000 /dev/zero | tr '\0' x)
for i in $(seq 48); do printf '%s\n' "$row"; done
: >` + mark + `
read l; printf '{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}\n'
exec cat >/dev/null`
}

// Output an agent writes while no call waits (between turns) stays in its
// stdout pipe: before, a goroutine read it into a buffer of 256 lines of up
// to 4 MiB each, so 150 lines of 1 MB were 143 MiB of daemon heap held
// until the next turn. The agent here prints 48 (46 MiB, well over the
// 16 MiB the test allows held: fewer lines cost less under the race
// detector). The agent's mark shows whether it could write them
// all; the control is the second turn, which reads the 48 lines (its
// output limit allows them) and then its response, after which the mark
// exists.
func TestOutputBetweenTurnsWaitsInThePipe(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "written")
	a := start(t, adaptertest.Launch(t, "bash", "-c", chattyAgent(mark)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := testbin.LiveHeap()
	if _, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "one", OutputLimit: 1 << 20}, func(wire.Event) {}); err != nil {
		t.Fatalf("turn 1: %v", err)
	}
	held := testbin.HeapWhileUnread(t, a.Process(), mark, base)
	t.Logf("between turns the daemon held %d MiB of the agent's 46 MiB", held>>20)
	if held > 16<<20 {
		t.Errorf("output printed between turns is held by the daemon: %d MiB", held>>20)
	}
	if _, err := a.Turn(ctx, harness.TurnInput{Number: 2, Message: "two", OutputLimit: 1 << 30}, func(wire.Event) {}); err != nil {
		t.Fatalf("turn 2 (reads the 48 lines, then its response): %v", err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("after turn 2 read its output the agent has not written every line: %v", err)
	}
}
