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

// linesAgent answers initialize, then answers a turn with n assistant
// lines of 4,000 empty content blocks each (12 KB, within
// adapterkit.MaxLineValues), then the turn's result.
func linesAgent(n string) string {
	return `read l; id=$(printf '%s' "$l" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id"
read l
blocks=$(yes '{},' | head -n 3999 | tr -d '\n')
for i in $(seq ` + n + `); do printf '{"type":"assistant","message":{"role":"assistant","content":[%s{}]}}\n' "$blocks"; done
printf '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}\n'
exec cat >/dev/null`
}

// A turn's lines are bounded in JSON values in all, not only each line
// (adapterkit.TurnValueBytes): lines of 4,000 empty content blocks, each
// within the line's bound, made the daemon decode a block of each however
// many lines the turn's output limit let through, 1 MiB of them (a
// quarter of it here) allocating about 100 MiB. With a 1 MiB output
// limit (65,536 values) the turn now fails with output_limit naming
// episode.output_limit after the 17th line. The control: 15 lines (60,000
// values) and the turn ends normally.
func TestATurnOfManyValuesFailsTheTurn(t *testing.T) {
	turn := func(lines string) (harness.TurnResult, uint64, error) {
		a := New()
		l := adaptertest.Launch(t, "bash", "-c", linesAgent(lines))
		if err := a.Start(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		defer a.Stop(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var res harness.TurnResult
		var err error
		got := testbin.Allocated(func() {
			res, err = a.Turn(ctx, harness.TurnInput{Number: 1, Message: "go", OutputLimit: 1 << 20}, func(wire.Event) {})
		})
		return res, got, err
	}
	if res, _, err := turn("15"); err != nil || res.Response != "ok" {
		t.Fatalf("the control, 15 lines of 4,000 blocks: %+v %v", res, err)
	}
	_, got, err := turn("25")
	t.Logf("25 lines of 4,000 empty blocks: %v; %d MiB allocated", err, got>>20)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureOutputLimit || !strings.Contains(f.Message, "episode.output_limit") {
		t.Errorf("25 lines of 4,000 empty blocks: %v, want output_limit naming episode.output_limit", err)
	}
}
