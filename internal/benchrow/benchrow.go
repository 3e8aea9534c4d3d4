// Package benchrow is the shared format of `make bench`'s figures: a figure
// measured several times (Spread: the median and min–max), the verdict
// against a target that is given only where the margin exceeds the spread,
// and the summary rows (Prefix lines) that integration/benchsummary prints
// as one table. It owns that format only: it measures nothing and is
// imported by benchmarks and the summary program, never by the daemon.
package benchrow

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Prefix starts every summary row; the columns follow, tab-separated.
const Prefix = "BENCHROW\t"

// Columns names the columns of a row.
var Columns = []string{"what", "harnessd", "floor (same run)", "ratio", "target", "verdict"}

// Verdicts.
const (
	Met          = "met"
	Missed       = "missed"
	WithinSpread = "within spread"
)

// Spread is a figure measured several times: the median, the least and the
// greatest.
type Spread struct{ Med, Lo, Hi float64 }

// Of returns the Spread of xs (zero for none).
func Of(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Spread{Med: s[len(s)/2], Lo: s[0], Hi: s[len(s)-1]}
}

// Format prints the median and the spread with verb, e.g. "%.2f" gives
// "1.23 (1.20–1.31)".
func (s Spread) Format(verb string) string {
	return fmt.Sprintf(verb+" ("+verb+"–"+verb+")", s.Med, s.Lo, s.Hi)
}

// Verdict compares s with target: Met or Missed where the margin (the
// median's distance from the target) exceeds the spread (max − min) or
// every repeat lies on the same side of the target, otherwise
// WithinSpread (the target lies inside a spread wider than the margin).
// atMost says whether the target is an upper bound (a cost) or a lower one
// (a throughput).
func Verdict(s Spread, target float64, atMost bool) string {
	margin := target - s.Med // > 0: on the good side
	best, worst := s.Lo, s.Hi
	if !atMost {
		margin, best, worst = -margin, s.Hi, s.Lo
	}
	good := func(x float64) bool { return x <= target == atMost || x == target }
	width := s.Hi - s.Lo
	switch {
	case margin > width || (margin == 0 && width == 0) || good(worst):
		return Met
	case -margin > width || !good(best):
		return Missed
	}
	return WithinSpread
}

// Row writes one summary row to stdout: what is measured, harnessd's
// figure, the floor's, the ratio, the target and the verdict; an empty
// column is printed as "—".
func Row(what, harnessd, floor, ratio, target, verdict string) {
	WriteRow(os.Stdout, what, harnessd, floor, ratio, target, verdict)
}

// WriteRow is Row to w.
func WriteRow(w io.Writer, cols ...string) {
	out := make([]string, len(Columns))
	for i := range out {
		c := ""
		if i < len(cols) {
			c = strings.Join(strings.Fields(cols[i]), " ") // no tabs or newlines
		}
		if c == "" {
			c = "—"
		}
		out[i] = c
	}
	fmt.Fprintf(w, "\n%s%s\n", Prefix, strings.Join(out, "\t"))
}

// RatioRow writes the row of a cost ratio against a floor with its
// verdict; harnessd's and the floor's figures are printed with no decimals
// and unit.
func RatioRow(what, unit string, harnessd, floor, ratio Spread, target float64) {
	Row(what, harnessd.Format("%.0f")+" "+unit, floor.Format("%.0f")+" "+unit, ratio.Format("%.2f"),
		fmt.Sprintf("≤ %.1f×", target), Verdict(ratio, target, true))
}
