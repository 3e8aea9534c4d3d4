package integration

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
)

// forkTurns are the parent's turns before each fork: a file written, the
// agent's memory of the conversation.
var forkTurns = []string{"write notes.txt parent-wrote", "reply second"}

// forkSamples is how many forks each daemon of BenchmarkFork makes per G.
const forkSamples = 4

// BenchmarkFork measures forking a live test-agent episode into G siblings
// (G = 1, 8, 32; by the line protocol's fork message and by replay) in
// sandbox isolation, against the floor measured in the same run: G fresh
// sessions each reset and driven through the parent's turns (what a
// sibling costs without a fork). Per repeat a fresh daemon; the fork's
// wall time until every sibling is ready (p50 and worst of forkSamples),
// and the daemon's memory and the disk per sibling.
func BenchmarkFork(b *testing.B) {
	ctx := context.Background()
	for _, mech := range []string{"line", "replay"} {
		for _, g := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("%s/G=%d", mech, g), func(b *testing.B) {
				var p50, worst, floor, ratio, rss, disk []float64
				for range repeats {
					r := forkRepeat(b, ctx, mech, g)
					p50 = append(p50, ms(r.fork.p50()))
					worst = append(worst, ms(r.fork.pct(1)))
					floor = append(floor, ms(r.floor.p50()))
					ratio = append(ratio, float64(r.fork.p50())/float64(r.floor.p50()))
					rss = append(rss, r.rssKiB/float64(g)/1024)
					disk = append(disk, r.diskKiB/float64(g)/1024)
				}
				b.ReportMetric(spreadOf(p50).Med, "fork-p50-ms")
				b.ReportMetric(spreadOf(ratio).Med, "fork/floor")
				f := func(xs []float64, verb string) string { return spreadOf(xs).Format(verb) }
				summary("fork %s G=%d: p50 %s ms, worst %s ms; floor (G cold resets + %d turns each) %s ms; ratio %s; per sibling daemon RSS %s MiB, disk %s MiB",
					mech, g, f(p50, "%.0f"), f(worst, "%.0f"), len(forkTurns), f(floor, "%.0f"), f(ratio, "%.2f"), f(rss, "%.2f"), f(disk, "%.2f"))
				row(fmt.Sprintf("fork ×%d (%s), test agent, sandbox", g, mech), f(p50, "%.0f")+" ms", f(floor, "%.0f")+" ms cold resets + turns",
					f(ratio, "%.2f"), "—", "—")
			})
		}
	}
}

// forkRun is one repeat's figures.
type forkRun struct {
	fork, floor     samples
	rssKiB, diskKiB float64
}

// forkRepeat runs one daemon's forks of G and its floor.
func forkRepeat(b *testing.B, ctx context.Context, mech string, g int) forkRun {
	b.Helper()
	flags := []string{"--isolation", "sandbox", "--log-level", "info", "--max-sessions", fmt.Sprint(2*g + 4)}
	d := startDaemon(b, spec{Flags: flags, Harness: agentCmd(b)})
	defer d.Stop()
	parent, err := client.Dial(ctx, d.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer parent.Close()
	forkParent(b, ctx, parent)
	var r forkRun
	for i := range forkSamples {
		rss0, disk0 := settledRSS(b, d.cmd.Process.Pid), diskKiB(d.Dir)
		t0 := time.Now()
		sibs, err := parent.Fork(ctx, client.ForkOptions{Count: g, Mechanism: mech})
		took := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		for j, s := range sibs {
			if s.Err != nil || s.Mechanism != mech {
				b.Fatalf("sibling %d: %v (%s)", j, s.Err, s.Mechanism)
			}
		}
		r.fork = append(r.fork, took)
		if i == 0 {
			r.rssKiB = float64(settledRSS(b, d.cmd.Process.Pid) - rss0)
			r.diskKiB = diskKiB(d.Dir) - disk0
		}
		closeSiblings(b, ctx, parent, sibs)
	}
	for range forkSamples {
		r.floor = append(r.floor, coldReplays(b, ctx, d, g))
	}
	return r
}

// forkParent resets env and runs the parent's turns.
func forkParent(b *testing.B, ctx context.Context, env *client.Env) {
	b.Helper()
	if err := runParent(ctx, env); err != nil {
		b.Fatal(err)
	}
}

// runParent resets env and runs the parent's turns.
func runParent(ctx context.Context, env *client.Env) error {
	if obs, err := env.Reset(ctx, client.ResetOptions{}); err != nil || obs.Done {
		return fmt.Errorf("reset: %v %+v", err, obs)
	}
	for _, m := range forkTurns {
		if obs, err := env.Step(ctx, m); err != nil || obs.Done {
			return fmt.Errorf("step %q: %v %+v", m, err, obs)
		}
	}
	return nil
}

// closeSiblings attaches to each sibling and closes its session.
func closeSiblings(b *testing.B, ctx context.Context, parent *client.Env, sibs []client.Sibling) {
	b.Helper()
	var wg sync.WaitGroup
	for _, s := range sibs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := parent.AttachSibling(ctx, s)
			if err != nil {
				b.Error(err)
				return
			}
			e.Close()
		}()
	}
	wg.Wait()
}

// coldReplays is the floor: g new sessions at once, each reset and driven
// through the parent's turns; the wall time until all are done.
func coldReplays(b *testing.B, ctx context.Context, d *daemon, g int) time.Duration {
	b.Helper()
	envs := make([]*client.Env, g)
	for i := range envs {
		e, err := client.Dial(ctx, d.URL, nil)
		if err != nil {
			b.Fatal(err)
		}
		envs[i] = e
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, e := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := runParent(ctx, e); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	for _, e := range envs {
		e.Close()
	}
	return took
}

// diskKiB is what the files under dir occupy (st_blocks, so sparse images
// count what they hold).
func diskKiB(dir string) float64 {
	var n int64
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := e.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return float64(n) / 1024
}
