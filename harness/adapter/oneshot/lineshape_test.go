package oneshot

import (
	"context"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// A line's JSON objects and arrays are bounded (adapterkit.MaxLineValues):
// an agent format's line is decoded whole into Go values, so a 4 MiB codex
// event of empty objects ({},) cost hundreds of MiB. The turn now fails
// with output_limit naming the count. The control: 1,000 objects are read
// and the turn ends normally.
func TestALineOfManyObjectsFailsTheOneShotTurn(t *testing.T) {
	turn := func(n string) (uint64, error) {
		script := `printf '{"type":"item.completed","item":{"type":"agent_message","text":"ok","pad":['
yes '{},' | head -n ` + n + ` | tr -d '\n'
printf '{}]}}\n'`
		l := launch(t, map[string]any{"format": FormatCodex, "first_command": []string{"bash", "-c", script}, "command": []string{"bash", "-c", script}}, "unused")
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
	t.Logf("a line of 1,400,000 empty objects: %v; %d MiB allocated", err, got>>20)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureOutputLimit {
		t.Errorf("a line of 1,400,000 empty objects: %v, want output_limit", err)
	}
	if got > 64<<20 {
		t.Errorf("a line of 1,400,000 empty objects allocated %d MiB", got>>20)
	}
}
