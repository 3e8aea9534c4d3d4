package streamjson

import (
	"context"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/wire"
)

// blocksAgent answers initialize, then answers a turn with an assistant
// line whose content is n empty blocks, then the turn's result.
func blocksAgent(n string) string {
	return `read l; id=$(printf '%s' "$l" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id"
read l
printf '{"type":"assistant","message":{"role":"assistant","content":['
yes '{},' | head -n ` + n + ` | tr -d '\n'
printf '{}]}}\n{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}\n'
exec cat >/dev/null`
}

// A line's JSON objects and arrays are bounded (adapterkit.MaxLineContainers):
// decoding made a block struct of each, so a 4 MiB assistant line of empty
// content blocks ({},) allocated 1,122 MiB. The turn now fails with
// output_limit naming the count, before the line is decoded. The control:
// 1,000 blocks are decoded and the turn ends normally.
func TestALineOfManyObjectsFailsTheTurn(t *testing.T) {
	turn := func(n string) (harness.TurnResult, error, uint64) {
		a := New()
		l := adaptertest.Launch(t, "bash", "-c", blocksAgent(n))
		l.MaxLineBytes = 8 << 20 // the line is within the line limit
		if err := a.Start(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		defer a.Stop(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var res harness.TurnResult
		var err error
		got := allocatedBy(func() {
			res, err = a.Turn(ctx, harness.TurnInput{Number: 1, Message: "go", OutputLimit: 16 << 20}, func(wire.Event) {})
		})
		return res, err, got
	}
	res, err, got := turn("1000")
	if err != nil || res.Response != "ok" {
		t.Fatalf("the control, 1,000 blocks: %+v %v", res, err)
	}
	_, err, got = turn("1400000")
	t.Logf("a line of 1,400,000 empty blocks: %v; %d MiB allocated", err, got>>20)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureOutputLimit {
		t.Errorf("a line of 1,400,000 empty blocks: %v, want output_limit", err)
	}
	if got > 64<<20 {
		t.Errorf("a line of 1,400,000 empty blocks allocated %d MiB", got>>20)
	}
}
