package evaljob_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/benchrow"
	"github.com/harnessd/harnessd/internal/testbin"
)

// benchAttempts × the fixture's 3 tasks are the trials of each measured
// job.
const benchAttempts = 16

// BenchmarkEvalOracleThroughput measures the trials per hour of an oracle
// job (the fixture's hello, count and wrong tasks, 16 attempts each: 48
// trials) at -n 1, 4 and 16, against its floor in the same run: bin/harnessd
// run --task DIR --oracle once per trial, one after another (a process,
// its start-up, one solve and one grade per trial). Each figure is the
// median of 3 repeats, with the spread; the ratio is the job's throughput
// over the floor's. A trial's solve and grade each start a sandbox, so on
// 2 cores the job is bound by them, and -n beyond the cores buys little.
func BenchmarkEvalOracleThroughput(b *testing.B) {
	harbor, wrong := taskFixture(b)
	harnessd := testbin.Path(b, "harnessd")
	tasks := []string{filepath.Join(harbor, "hello"), filepath.Join(harbor, "count"), wrong}
	trials := len(tasks) * benchAttempts
	perHour := func(d time.Duration) float64 { return float64(trials) / d.Hours() }
	floor := func() float64 {
		start := time.Now()
		for range benchAttempts {
			for _, task := range tasks {
				out, err := exec.Command(harnessd, "run", "--task", task, "--oracle").CombinedOutput()
				if err != nil && !strings.Contains(string(out), `"reward":0`) { // wrong scores 0 and exits 1
					b.Fatalf("run --task %s --oracle: %v\n%s", task, err, out)
				}
			}
		}
		return perHour(time.Since(start))
	}
	job := func(n int) float64 {
		dir := filepath.Join(b.TempDir(), "job")
		start := time.Now()
		out, err := exec.Command(harnessd, "eval", "--tasks", harbor, "--tasks", wrong, "--oracle",
			"-k", fmt.Sprint(benchAttempts), "-n", fmt.Sprint(n), "--job-dir", dir).CombinedOutput()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("eval -n %d: %v\n%s", n, err, out)
		}
		os.RemoveAll(dir)
		return perHour(d)
	}
	ns := []int{1, 4, 16}
	for b.Loop() {
		var floors []float64
		jobs := map[int][]float64{}
		ratios := map[int][]float64{}
		for range 3 {
			f := floor()
			floors = append(floors, f)
			for _, n := range ns {
				j := job(n)
				jobs[n] = append(jobs[n], j)
				ratios[n] = append(ratios[n], j/f)
			}
		}
		fs := benchrow.Of(floors)
		fmt.Printf("\nBENCH eval oracle job, %d trials: floor (run --task --oracle per trial, in sequence) %s trials/h\n", trials, fs.Format("%.0f"))
		for _, n := range ns {
			js, rs := benchrow.Of(jobs[n]), benchrow.Of(ratios[n])
			fmt.Printf("BENCH eval oracle job -n %d: %s trials/h, %s× the floor\n", n, js.Format("%.0f"), rs.Format("%.2f"))
			benchrow.Row(fmt.Sprintf("eval --oracle -n %d: trials per hour", n), js.Format("%.0f")+" /h", fs.Format("%.0f")+" /h",
				rs.Format("%.2f"), "", "")
			b.ReportMetric(js.Med, fmt.Sprintf("trials/h@n%d", n))
		}
		b.ReportMetric(fs.Med, "floor-trials/h")
	}
}
