package acp

import (
	"context"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// A line's JSON objects and arrays are bounded (adapterkit.MaxLineValues)
// for ACP too: a session/update of 4 MiB of empty objects ({},) is refused
// with output_limit before it is decoded. The control: 1,000 objects in
// the update, and the turn ends normally.
func TestALineOfManyObjectsFailsTheACPTurn(t *testing.T) {
	turn := func(n string) (uint64, error) {
		script := `read l; printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}\n'
read l; printf '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}\n'
read l
printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":['
yes '{},' | head -n ` + n + ` | tr -d '\n'
printf '{}]}}}\n{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}\n'
exec cat >/dev/null`
		l := adaptertest.Launch(t, "bash", "-c", script)
		l.MaxLineBytes = 8 << 20 // the line is within the line limit
		a := start(t, l)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var err error
		got := testbin.Allocated(func() {
			_, err = a.Turn(ctx, harness.TurnInput{Number: 1, Message: "go", OutputLimit: 16 << 20}, func(wire.Event) {})
		})
		return got, err
	}
	if _, err := turn("1000"); err != nil {
		t.Fatalf("the control, 1,000 objects: %v", err)
	}
	got, err := turn("1400000")
	t.Logf("an update of 1,400,000 empty objects: %v; %d MiB allocated", err, got>>20)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureOutputLimit {
		t.Errorf("an update of 1,400,000 empty objects: %v, want output_limit", err)
	}
	if got > 64<<20 {
		t.Errorf("an update of 1,400,000 empty objects allocated %d MiB", got>>20)
	}
}
