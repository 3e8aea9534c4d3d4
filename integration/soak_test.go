package integration

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
)

// daemonFigures are the daemon's resource counts at one moment.
type daemonFigures struct {
	rssKiB, fds, threads, goroutines, children int
}

func (f daemonFigures) String() string {
	return fmt.Sprintf("RSS %.1f MiB, %d fds, %d threads, %d goroutines, %d child processes",
		float64(f.rssKiB)/1024, f.fds, f.threads, f.goroutines, f.children)
}

// procThreads reads a process's thread count from /proc.
func procThreads(tb testing.TB, pid int) int {
	tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Threads:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	tb.Fatal("no Threads in /proc status")
	return 0
}

// procFDs counts a process's open file descriptors.
func procFDs(tb testing.TB, pid int) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

var goroutineHeader = regexp.MustCompile(`(?m)^goroutine \d+ \[`)

// goroutines asks the daemon for its goroutine stacks (SIGQUIT writes them
// to stderr and the daemon keeps running) and counts them.
func (d *daemon) goroutines() int {
	d.t.Helper()
	before := len(d.Log())
	d.Signal(syscall.SIGQUIT)
	// The dump is written in one go; wait until the log stops growing.
	last, stable := -1, 0
	for i := 0; i < 500 && stable < 5; i++ {
		time.Sleep(20 * time.Millisecond)
		if n := len(d.Log()); n == last && n > before {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	n := len(goroutineHeader.FindAllString(d.Log()[before:], -1))
	if n == 0 {
		d.t.Fatalf("SIGQUIT gave no goroutine dump:\n%s", d.Log()[before:])
	}
	return n
}

// figures samples the daemon once it is quiet.
func (d *daemon) figures() daemonFigures {
	d.t.Helper()
	return daemonFigures{rssKiB: settledRSS(d.t, d.Pid()), fds: procFDs(d.t, d.Pid()), threads: procThreads(d.t, d.Pid()),
		goroutines: d.goroutines(), children: len(d.Tree())}
}

// BenchmarkSoak: 8 sessions against one daemon with the test agent and the
// test tool server, 10,000 turns (one in ten a tool call through the
// bridge) and 1,000 resets in all, and the growth of the daemon's RSS, fds,
// threads and goroutines and of its live child processes between a warm
// baseline (the sessions connected and reset once) and the end (the same
// sessions, quiet), and over the second half alone (the steady state: Go
// keeps the threads and heap it grew to at peak concurrency, so growth that
// is a high-water mark shows in the first half only), and the processes
// left once the sessions are closed. Run with
// -benchtime 1x: one iteration is the whole soak.
func BenchmarkSoak(b *testing.B) {
	const sessions, resets, turnsPerReset = 8, 125, 10 // 1,000 resets, 10,000 turns
	for i := 0; i < b.N; i++ {
		d := startDaemon(b, spec{Flags: []string{"--max-sessions", strconv.Itoa(sessions), toolsFlag(b), "--log-level", "warn"},
			Harness: agentCmd(b), Env: []string{"GOMAXPROCS=2"}})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		envs := make([]*client.Env, sessions)
		for s := range envs {
			env, err := client.Dial(ctx, d.URL, nil)
			if err != nil {
				b.Fatal(err)
			}
			envs[s] = env
		}
		// Warm: every session reset once and through one turn of each kind.
		for _, env := range envs {
			if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
				b.Fatal(err)
			}
			for _, msg := range []string{"reply warm", `tool add {"a":2,"b":3}`} {
				if _, err := env.Step(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
		}
		base := d.figures()

		var (
			mu         sync.Mutex
			errs       []error
			turnsDone  int
			resetsDone int
		)
		// run drives every session through n resets of turnsPerReset turns.
		run := func(phase, n int) {
			var wg sync.WaitGroup
			for s, env := range envs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; r < n; r++ {
						if obs, err := env.Reset(ctx, client.ResetOptions{}); err != nil || obs.Done {
							mu.Lock()
							errs = append(errs, fmt.Errorf("session %d phase %d reset %d: %v", s, phase, r, err))
							mu.Unlock()
							return
						}
						for t := 0; t < turnsPerReset; t++ {
							msg, want := fmt.Sprintf("reply s%d p%d r%d t%d", s, phase, r, t), fmt.Sprintf("s%d p%d r%d t%d", s, phase, r, t)
							if t == turnsPerReset/2 {
								msg, want = `tool add {"a":2,"b":3}`, "add -> 5"
							}
							obs, err := env.Step(ctx, msg)
							if err != nil || obs.Done || obs.ResponseText() != want {
								mu.Lock()
								errs = append(errs, fmt.Errorf("session %d phase %d reset %d turn %d: %v %q", s, phase, r, t, err, obs.ResponseText()))
								mu.Unlock()
								return
							}
						}
						mu.Lock()
						resetsDone++
						turnsDone += turnsPerReset
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(errs) > 0 {
				b.Fatalf("%d errors, first: %v", len(errs), errs[0])
			}
		}
		start := time.Now()
		run(1, resets/2)
		mid := d.figures()
		run(2, resets-resets/2)
		wall := time.Since(start)
		end := d.figures()
		for _, env := range envs {
			env.Close()
		}
		cancel()
		d.WaitSessions(0)
		d.WaitTreeEmpty()
		left := len(d.Tree())
		if code := d.Stop(); code != 0 {
			b.Fatalf("daemon exit code %d", code)
		}
		grow := func(a, b int) int { return b - a }
		since := func(from daemonFigures) string {
			return fmt.Sprintf("RSS %+.1f MiB, fds %+d, threads %+d, goroutines %+d, child processes %+d",
				float64(grow(from.rssKiB, end.rssKiB))/1024, grow(from.fds, end.fds), grow(from.threads, end.threads),
				grow(from.goroutines, end.goroutines), grow(from.children, end.children))
		}
		b.ReportMetric(float64(grow(base.rssKiB, end.rssKiB))/1024, "RSS-growth-MiB")
		b.ReportMetric(float64(grow(base.fds, end.fds)), "fd-growth")
		b.ReportMetric(float64(grow(base.threads, end.threads)), "thread-growth")
		b.ReportMetric(float64(grow(base.goroutines, end.goroutines)), "goroutine-growth")
		summary("soak sessions=%d resets=%d turns=%d (one in %d a tool call) cores=%d: 0 errors, wall %.1fs",
			sessions, resetsDone, turnsDone, turnsPerReset, runtime.NumCPU(), wall.Seconds())
		summary("soak baseline (warm, %d sessions live): %s", sessions, base)
		summary("soak half-way (%d resets, %d turns): %s", sessions*(resets/2), sessions*(resets/2)*turnsPerReset, mid)
		summary("soak end (same sessions, quiet): %s", end)
		summary("soak growth over the whole run: %s; after close: %d processes left", since(base), left)
		summary("soak growth over the second half (steady state): %s", since(mid))
	}
}
