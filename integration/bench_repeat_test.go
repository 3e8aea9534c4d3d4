package integration

// Repeats of the fair benchmarks (spreads, verdicts and summary rows in
// internal/benchrow), and the out-of-process floors of integration/benchfloor.

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/internal/benchrow"
	"github.com/harnessd/harnessd/internal/testbin"
)

// repeats is how many times every figure of the fair benchmarks is measured;
// each figure is reported as the median with the spread (min–max).
const repeats = 3

// infoLevel runs a benchmarked daemon at its default log level
// (startDaemon asks for debug, which logs more per turn than a deployment
// does).
var infoLevel = []string{"--log-level", "info"}

// infoLog is infoLevel in the isolation HARNESSD_BENCH_ISOLATION names, or
// with no --isolation at all: the daemon's default (a sandbox wherever the
// host allows one), which is what deployments run and what the benchmarks
// are to measure. Benchmarks that compare isolations set theirs
// explicitly on top of infoLevel.
var infoLog = append(append([]string{}, infoLevel...), isolationFlags()...)

// isolationFlags is --isolation HARNESSD_BENCH_ISOLATION, or nothing.
func isolationFlags() []string {
	if v := os.Getenv("HARNESSD_BENCH_ISOLATION"); v != "" {
		return []string{"--isolation", v}
	}
	return nil
}

// flagIsolation is the isolation a daemon started with flags runs in: the
// last --isolation's, else the default (sandbox, on the hosts the
// benchmarks need).
func flagIsolation(flags []string) string {
	iso := "sandbox"
	for i, f := range flags {
		if f == "--isolation" && i+1 < len(flags) {
			iso = flags[i+1]
		}
	}
	return iso
}

// spreadOf is benchrow.Of.
func spreadOf(xs []float64) benchrow.Spread { return benchrow.Of(xs) }

// row, ratioRow and verdict are benchrow's.
var (
	row      = benchrow.Row
	ratioRow = benchrow.RatioRow
	verdict  = benchrow.Verdict
)

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
