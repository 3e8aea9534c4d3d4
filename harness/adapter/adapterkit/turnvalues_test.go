package adapterkit_test

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/wire"
)

// A turn's count fails the line that takes it over OutputLimit /
// TurnValueBytes values, naming the knob; a line of more than
// MaxLineValues fails alone, with or without a turn's count.
func TestTurnValues(t *testing.T) {
	line := []byte("[" + strings.Repeat("0,", 999) + "0]") // 1,001 values
	v := adapterkit.NewTurnValues(3000 * adapterkit.TurnValueBytes)
	for i := range 2 {
		if err := v.Check(line); err != nil {
			t.Fatalf("line %d of 1,001 values: %v", i+1, err)
		}
	}
	err := v.Check(line)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureOutputLimit || !strings.Contains(f.Message, "more than 3000 JSON") ||
		!strings.Contains(f.Message, "episode.output_limit") {
		t.Errorf("the third line of 1,001 values: %v, want output_limit naming episode.output_limit", err)
	}
	for _, v := range []*adapterkit.TurnValues{nil, adapterkit.NewTurnValues(0)} {
		for range 100 {
			if err := v.Check(line); err != nil {
				t.Fatalf("no bound for the turn: %v", err)
			}
		}
		big := []byte("[" + strings.Repeat("0,", adapterkit.MaxLineValues) + "0]")
		if f, ok := harness.AsFailure(v.Check(big)); !ok || f.Type != wire.FailureOutputLimit || !strings.Contains(f.Message, "a line of") {
			t.Errorf("a line over MaxLineValues: %v", f)
		}
	}
}
