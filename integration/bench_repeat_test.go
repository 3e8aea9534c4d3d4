package integration

// Repeats, spreads, verdicts and the summary rows of `make bench`, and the
// out-of-process floors of integration/benchfloor.

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// repeats is how many times every figure of the fair benchmarks is measured;
// each figure is reported as the median with the spread (min–max).
const repeats = 3

// infoLog runs a benchmarked daemon at its default log level (startDaemon
// asks for debug, which logs more per turn than a deployment does).
var infoLog = []string{"--log-level", "info"}

// spread is a figure measured repeats times.
type spread struct{ med, lo, hi float64 }

func spreadOf(xs []float64) spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return spread{}
	}
	return spread{med: s[len(s)/2], lo: s[0], hi: s[len(s)-1]}
}

// format prints the median and the spread with the given verb, e.g. "%.2f".
func (s spread) format(verb string) string {
	return fmt.Sprintf(verb+" ("+verb+"–"+verb+")", s.med, s.lo, s.hi)
}

// verdict compares a repeated figure with its target: "met" or "missed"
// only where the margin (the median's distance from the target) exceeds the
// spread (max − min), otherwise "within spread". atMost says whether the
// target is an upper bound (ratios of cost) or a lower one (throughput).
func verdict(s spread, target float64, atMost bool) string {
	margin := s.med - target
	if !atMost {
		margin = -margin
	}
	switch {
	case margin < 0 && -margin > s.hi-s.lo:
		return "met"
	case margin > 0 && margin > s.hi-s.lo:
		return "missed"
	case margin == 0 && s.hi == s.lo:
		return "met"
	}
	return "within spread"
}

// row prints one row of the summary table that `make bench` prints at the
// end (integration/benchsummary reads these lines from bin/bench.txt):
// what is measured, harnessd's figure, the floor's, the ratio, the target
// and the verdict; "—" where a column does not apply.
func row(what, harnessd, floor, ratio, target, verdict string) {
	cols := []string{what, harnessd, floor, ratio, target, verdict}
	for i, c := range cols {
		if c == "" {
			cols[i] = "—"
		}
		cols[i] = strings.ReplaceAll(cols[i], "\t", " ")
	}
	fmt.Printf("\nBENCHROW\t%s\n", strings.Join(cols, "\t"))
}

// ratioRow prints a row for a cost ratio against a floor, with its verdict.
func ratioRow(what, unit string, harnessd, floor, ratio spread, target float64) {
	row(what, harnessd.format("%.0f")+" "+unit, floor.format("%.0f")+" "+unit, ratio.format("%.2f"),
		fmt.Sprintf("≤ %.1f×", target), verdict(ratio, target, true))
}

// floorProc is a running benchfloor server.
type floorProc struct {
	Addr string
	cmd  *exec.Cmd
	in   io.WriteCloser
}

// startFloor starts `benchfloor MODE ARGS...` and reads its address; it is
// stopped (stdin closed, then killed) when the benchmark ends.
func startFloor(tb testing.TB, mode string, args ...string) *floorProc {
	tb.Helper()
	cmd := exec.Command(benchfloorBin(tb), append([]string{mode}, args...)...)
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start benchfloor %s: %v", mode, err)
	}
	f := &floorProc{cmd: cmd, in: in}
	tb.Cleanup(f.stop)
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatalf("benchfloor %s gave no address: %v\n%s", mode, err, stderr.String())
	}
	f.Addr = strings.TrimSpace(addr)
	return f
}

// Pid is the floor server's pid.
func (f *floorProc) Pid() int { return f.cmd.Process.Pid }

func (f *floorProc) stop() {
	f.in.Close()
	f.cmd.Process.Kill()
	f.cmd.Wait()
}

func benchfloorBin(tb testing.TB) string { return testbin.Path(tb, "benchfloor") }
