package benchrow

import (
	"bytes"
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		s      Spread
		target float64
		atMost bool
		want   string
	}{
		{Spread{1.1, 1.05, 1.15}, 1.3, true, Met},         // margin 0.2 > spread 0.1
		{Spread{1.25, 1.2, 1.4}, 1.3, true, WithinSpread}, // margin 0.05 < spread 0.2
		{Spread{1.6, 1.55, 1.62}, 1.3, true, Missed},      // 0.3 over, spread 0.07
		{Spread{1.35, 1.1, 1.6}, 1.3, true, WithinSpread}, // over, but within the spread
		{Spread{0.65, 0.64, 0.69}, 0.9, false, Missed},    // throughput below its floor
		{Spread{0.97, 0.95, 0.99}, 0.9, false, Met},       // throughput above
		{Spread{0.3, 0.3, 0.3}, 0.5, true, Met},           // one run: no spread
		{Spread{0.5, 0.5, 0.5}, 0.5, true, Met},           // on the bound, no spread
		{Spread{364, 302, 695}, 5, true, Missed},          // every repeat over, however wide the spread
		{Spread{0.3, 0.1, 0.85}, 0.9, false, Missed},      // every repeat under
		{Spread{1.0, 0.5, 1.2}, 1.2, true, Met},           // every repeat at or under
		{Spread{1.0, 0.91, 1.8}, 0.9, false, Met},         // every repeat above
		{Spread{1.0, 0.8, 1.9}, 0.9, false, WithinSpread}, // one repeat below
	} {
		if got := Verdict(c.s, c.target, c.atMost); got != c.want {
			t.Errorf("Verdict(%+v, %v, %v) = %q, want %q", c.s, c.target, c.atMost, got, c.want)
		}
	}
}

func TestOfAndFormat(t *testing.T) {
	s := Of([]float64{3, 1, 2})
	if s != (Spread{2, 1, 3}) {
		t.Fatalf("Of = %+v", s)
	}
	if got := s.Format("%.1f"); got != "2.0 (1.0–3.0)" {
		t.Fatalf("Format = %q", got)
	}
	if (Of(nil) != Spread{}) {
		t.Fatal("Of(nil) is not zero")
	}
}

func TestWriteRow(t *testing.T) {
	var b bytes.Buffer
	WriteRow(&b, "a\tb", "", "x\ny")
	line := strings.TrimSpace(b.String())
	want := Prefix + "a b\t—\tx y\t—\t—\t—"
	if line != want {
		t.Fatalf("row %q, want %q", line, want)
	}
}
