package streamjson

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
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

// lineTurn runs one turn against the agent script, returning its result,
// what the test process allocated during it and its error.
func lineTurn(t *testing.T, script string) (harness.TurnResult, uint64, error) {
	t.Helper()
	a := New()
	l := adaptertest.Launch(t, "bash", "-c", script)
	l.MaxLineBytes = 8 << 20 // the line is within the line limit
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var res harness.TurnResult
	var err error
	got := testbin.Allocated(func() {
		res, err = a.Turn(ctx, harness.TurnInput{Number: 1, Message: "go", OutputLimit: 16 << 20}, func(wire.Event) {})
	})
	return res, got, err
}

// A line's JSON objects and arrays are bounded (adapterkit.MaxLineValues):
// decoding made a block struct of each, so a 4 MiB assistant line of empty
// content blocks ({},) allocated 1,122 MiB. The turn now fails with
// output_limit naming the count, before the line is decoded. The control:
// 1,000 blocks are decoded and the turn ends normally.
func TestALineOfManyObjectsFailsTheTurn(t *testing.T) {
	if res, _, err := lineTurn(t, blocksAgent("1000")); err != nil || res.Response != "ok" {
		t.Fatalf("the control, 1,000 blocks: %+v %v", res, err)
	}
	_, got, err := lineTurn(t, blocksAgent("1400000"))
	t.Logf("a line of 1,400,000 empty blocks: %v; %d MiB allocated", err, got>>20)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureOutputLimit {
		t.Errorf("a line of 1,400,000 empty blocks: %v, want output_limit", err)
	}
	if got > 64<<20 {
		t.Errorf("a line of 1,400,000 empty blocks allocated %d MiB", got>>20)
	}
}

// scalarsAgent is blocksAgent with content of n elements elem (0, null).
func scalarsAgent(elem, n string) string {
	return strings.Replace(blocksAgent(n), "yes '{},'", "yes '"+elem+",'", 1)
}

// A line's array elements count as its objects do, scalars too: decoding
// made a content block of each, whatever it was, so a 1 MiB assistant line
// of zeros (0,) allocated 501 MiB, and one of nulls (null,) 191 MiB, taken as
// that many empty blocks, the turn ending normally. The turn now fails
// with output_limit before the line is decoded. The control: 1,000 nulls.
func TestALineOfManyScalarsFailsTheTurn(t *testing.T) {
	if res, _, err := lineTurn(t, scalarsAgent("null", "1000")); err != nil || res.Response != "ok" {
		t.Fatalf("the control, 1,000 nulls: %+v %v", res, err)
	}
	for _, c := range [][2]string{{"0", "524288"}, {"null", "209715"}} {
		_, got, err := lineTurn(t, scalarsAgent(c[0], c[1]))
		t.Logf("a line of %s elements %s: %v; %d MiB allocated", c[1], c[0], err, got>>20)
		if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureOutputLimit {
			t.Errorf("a line of %s elements %s: %v, want output_limit", c[1], c[0], err)
		}
		if got > 32<<20 {
			t.Errorf("a line of %s elements %s allocated %d MiB", c[1], c[0], got>>20)
		}
	}
}
