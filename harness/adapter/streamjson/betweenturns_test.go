package streamjson

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// chattyBetweenTurns is an agent that answers initialize and each turn,
// and after its first turn's result prints lines lines of size bytes that
// belong to no turn, then creates the file mark.
func chattyBetweenTurns(lines, size int, mark string) string {
	return `read l; id=$(printf '%s' "$l" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id"
result() { printf '{"type":"result","subtype":"success","is_error":false,"result":"%s","session_id":"s"}\n' "$1"; }
read l; result one
row=$(head -c ` + strconv.Itoa(size) + ` /dev/zero | tr '\0' x)
for i in $(seq ` + strconv.Itoa(lines) + `); do printf '%s\n' "$row"; done
: >` + mark + `
read l; result two
exec cat >/dev/null`
}

// Output an agent writes between turns waits in its own stdout pipe, not in
// the daemon: nothing reads it until the next turn does. Before, a
// goroutine read stdout into a buffer of 256 lines of up to 4 MiB each, so
// 150 lines of 1 MB printed after a turn's result were 143 MiB of daemon
// heap held until the next turn (up to 1 GiB an episode); the agent here
// prints 48 (46 MiB, well over the 16 MiB the test allows held). The agent's
// mark, made once every line is written, shows how far it got: it must
// not get past what its pipe holds while no turn reads. The control is the
// second turn: it reads the 48 lines (counted in its output, which the
// test's limit allows) and then the turn's result, after which the mark
// exists.
func TestOutputBetweenTurnsWaitsInThePipe(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "written")
	l := adaptertest.Launch(t, "bash", "-c", chattyBetweenTurns(48, 1000000, mark))
	a := New()
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := testbin.LiveHeap()
	if res, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "one", OutputLimit: 1 << 20}, func(wire.Event) {}); err != nil || res.Response != "one" {
		t.Fatalf("turn 1: %+v %v", res, err)
	}
	held := testbin.HeapWhileUnread(t, a.Process(), mark, base)
	t.Logf("between turns the daemon held %d MiB of the agent's 46 MiB", held>>20)
	if held > 16<<20 {
		t.Errorf("output printed between turns is held by the daemon: %d MiB", held>>20)
	}
	res, err := a.Turn(ctx, harness.TurnInput{Number: 2, Message: "two", OutputLimit: 1 << 30}, func(wire.Event) {})
	if err != nil || res.Response != "two" {
		t.Fatalf("turn 2 (reads the 48 lines, then its result): %+v %v", res, err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("after turn 2 read its output the agent has not written every line: %v", err)
	}
}
