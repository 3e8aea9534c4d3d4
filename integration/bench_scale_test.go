package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
)

// scaleLevels are the session counts of the scale curve.
var scaleLevels = []int{1, 8, 32, 64, 128, 256}

// runTurns has every session run turns steps at once and returns the step
// latencies and the wall time.
func runTurns(tb testing.TB, envs []*client.Env, turns int) (samples, time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		mu    sync.Mutex
		steps samples
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	for s, env := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make(samples, 0, turns)
			for t := range turns {
				want := fmt.Sprintf("s%d t%d", s, t)
				t0 := time.Now()
				obs, err := env.Step(ctx, "reply "+want)
				local = append(local, time.Since(t0))
				if err != nil || obs.ResponseText() != want || obs.Done {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("session %d turn %d: %v %q", s, t, err, obs.ResponseText())
					}
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			steps = append(steps, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if first != nil {
		tb.Fatal(first)
	}
	return steps, wall
}

// daemonCounts are the daemon's RSS (settled), threads and open fds.
func daemonCounts(tb testing.TB, pid int) (rssKiB, threads, fds int) {
	return settledRSS(tb, pid), procThreads(tb, pid), procFDs(tb, pid)
}

// BenchmarkScale: the scale curve. One daemon per repeat (the test agent,
// --max-sessions 256); sessions are opened (each reset) up to each level of
// scaleLevels, then every open session runs turns at once (together at
// least 1,024 turns, at least 4 per session): turns/s over the wall time,
// step p50/p99 under that load, and, with the sessions open and quiet, the
// daemon's RSS and its OS threads and open fds per session (over the same
// daemon with none).
func BenchmarkScale(b *testing.B) {
	type level struct{ tps, p50, p99, rss, threads, fds []float64 }
	figs := map[int]*level{}
	for _, n := range scaleLevels {
		figs[n] = &level{}
	}
	top := scaleLevels[len(scaleLevels)-1]
	for rep := 0; rep < repeats; rep++ {
		d := startDaemon(b, spec{Flags: append([]string{"--max-sessions", fmt.Sprint(top)}, infoLog...), Harness: agentCmd(b)})
		warm := openSessions(b, d.URL, 1, true)
		closeSessions(warm)
		d.WaitSessions(0)
		_, threads0, fds0 := daemonCounts(b, d.Pid())
		var envs []*client.Env
		for _, n := range scaleLevels {
			envs = append(envs, openSessions(b, d.URL, n-len(envs), false)...)
			turns := max(4, 1024/n)
			runTurns(b, envs, 2) // warm: every session has stepped
			steps, wall := runTurns(b, envs, turns)
			rss, threads, fds := daemonCounts(b, d.Pid())
			f := figs[n]
			f.tps = append(f.tps, float64(len(steps))/wall.Seconds())
			f.p50, f.p99 = append(f.p50, ms(steps.p50())), append(f.p99, ms(steps.p99()))
			f.rss = append(f.rss, float64(rss)/1024)
			f.threads = append(f.threads, float64(threads-threads0)/float64(n))
			f.fds = append(f.fds, float64(fds-fds0)/float64(n))
		}
		closeSessions(envs)
		d.WaitSessions(0)
		d.Stop()
	}
	for _, n := range scaleLevels {
		f := figs[n]
		tps, p50, p99 := spreadOf(f.tps), spreadOf(f.p50), spreadOf(f.p99)
		rss, th, fd := spreadOf(f.rss), spreadOf(f.threads), spreadOf(f.fds)
		summary("scale sessions=%d (×%d): %s turns/s | step p50 %sms p99 %sms | daemon RSS %s MiB | per session: %s threads, %s fds",
			n, repeats, tps.Format("%.0f"), p50.Format("%.2f"), p99.Format("%.1f"), rss.Format("%.1f"), th.Format("%.2f"), fd.Format("%.1f"))
		row(fmt.Sprintf("scale: %d sessions stepping at once", n),
			fmt.Sprintf("%s turns/s; step p50 %s ms, p99 %s ms; RSS %s MiB; per session %s threads, %s fds",
				tps.Format("%.0f"), p50.Format("%.2f"), p99.Format("%.1f"), rss.Format("%.1f"), th.Format("%.2f"), fd.Format("%.1f")),
			"", "", "", "")
	}
}

// BenchmarkResetThroughput: resets/s with 16 sessions resetting at once
// (b.N resets each) against bare spawn+kill at 16 at once: 16 goroutines,
// each b.N times stopping its previous bare agent and spawning the same
// agent binary until ready. Three daemons are measured against the same
// floor: the default sandbox isolation (its small embedded init), the
// sandbox with the daemon itself re-executed as the init
// (HARNESSD_SANDBOX_INIT=self, as before the small init), process
// isolation, and both without the per-episode disk quota (limits.disk: 0),
// to tell the quota's share. The phases alternate, repeats times, each daemon fresh; CPU
// per reset (the daemon's and everything it started, by rusage: see
// childrenUsage) is reported next to the floor's.
func BenchmarkResetThroughput(b *testing.B) {
	const conc = 16
	type level struct {
		name  string
		flags []string
		env   []string
	}
	noDisk := benchConfig(b, "nodisk.yaml", "limits:\n  disk: 0\n")
	noReuse := benchConfig(b, "noreuse.yaml", "sandbox:\n  reuse: false\n")
	levels := []level{
		{name: "sandbox", flags: isolationSandbox},
		{name: "sandbox, reuse off", flags: append([]string{"--config", noReuse}, isolationSandbox...)},
		{name: "sandbox, self-init", flags: isolationSandbox, env: []string{"HARNESSD_SANDBOX_INIT=self"}},
		{name: "sandbox, limits.disk 0", flags: append([]string{"--config", noDisk}, isolationSandbox...)},
		{name: "process", flags: isolationProcess},
		{name: "process, limits.disk 0", flags: append([]string{"--config", noDisk}, isolationProcess...)},
	}
	// HARNESSD_BENCH_RESET_LEVELS (names, comma-separated) runs only those
	// levels (and the floor): a profile of one level's storm.
	if only := os.Getenv("HARNESSD_BENCH_RESET_LEVELS"); only != "" {
		names := strings.Split(only, ",")
		levels = slices.DeleteFunc(levels, func(l level) bool { return !slices.Contains(names, l.name) })
	}
	rate, cpu, ratio, cpuRatio := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	switches, faults, own := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	note := func(name string, c resetCost) {
		rate[name], cpu[name] = append(rate[name], c.perSec), append(cpu[name], c.cpuMS)
		switches[name], faults[name] = append(switches[name], c.switches), append(faults[name], c.faults)
		own[name] = append(own[name], c.daemonMS)
	}
	for rep := 0; rep < repeats; rep++ {
		floor := bareResets(b, conc)
		note("bare", floor)
		for _, l := range levels {
			// Each level names its isolation: infoLog's would be HARNESSD_BENCH_ISOLATION's.
			c := daemonResets(b, conc, append(append([]string{"--max-sessions", fmt.Sprint(conc)}, infoLevel...), l.flags...), l.env)
			note(l.name, c)
			ratio[l.name], cpuRatio[l.name] = append(ratio[l.name], c.perSec/floor.perSec), append(cpuRatio[l.name], c.cpuMS/floor.cpuMS)
		}
	}
	ds, fs, rs := spreadOf(rate["sandbox"]), spreadOf(rate["bare"]), spreadOf(ratio["sandbox"])
	b.ReportMetric(ds.Med, "resets/s")
	b.ReportMetric(rs.Med, "ratio")
	if b.N < 5 {
		return
	}
	bc := spreadOf(cpu["bare"])
	// What a sandboxed reset costs over one in process isolation, which
	// starts no sandbox, with the sandbox reused across a session's
	// episodes (docs/security.md, "A sandbox kept across a session's
	// episodes").
	var sbOverProc []float64
	for i := range min(len(cpu["sandbox"]), len(cpu["process"])) {
		sbOverProc = append(sbOverProc, cpu["sandbox"][i]/cpu["process"][i])
	}
	sp := spreadOf(sbOverProc)
	summary("reset CPU, sandbox (reused) vs process isolation: %s ms vs %s ms per reset → %s×",
		spreadOf(cpu["sandbox"]).Format("%.1f"), spreadOf(cpu["process"]).Format("%.1f"), sp.Format("%.2f"))
	row("CPU per reset, sandbox (reused) vs process isolation", spreadOf(cpu["sandbox"]).Format("%.1f")+" ms",
		spreadOf(cpu["process"]).Format("%.1f")+" ms", sp.Format("%.2f"), "—", "—")
	for _, l := range levels {
		r, rr, c, cr := spreadOf(rate[l.name]), spreadOf(ratio[l.name]), spreadOf(cpu[l.name]), spreadOf(cpuRatio[l.name])
		summary("reset throughput (%s) sessions=%d n=%d×%d each: %s resets/s vs bare kill+spawn-until-ready at %d at once %s/s → ratio %s (target ≥ 0.8); CPU per reset %s ms (the daemon's own %s ms) vs bare %s ms → %s× (target ≤ 2); per reset %s voluntary context switches and %s minor faults vs bare %s and %s",
			l.name, conc, repeats, b.N, r.Format("%.0f"), conc, fs.Format("%.0f"), rr.Format("%.2f"), c.Format("%.1f"), spreadOf(own[l.name]).Format("%.2f"), bc.Format("%.1f"), cr.Format("%.2f"),
			spreadOf(switches[l.name]).Format("%.0f"), spreadOf(faults[l.name]).Format("%.0f"), spreadOf(switches["bare"]).Format("%.0f"), spreadOf(faults["bare"]).Format("%.0f"))
		row(fmt.Sprintf("resets/s, %d sessions at once (%s), vs bare kill+spawn at %d", conc, l.name, conc), r.Format("%.0f")+" /s", fs.Format("%.0f")+" /s",
			rr.Format("%.2f"), "≥ 0.8×", verdict(rr, 0.8, false))
		row(fmt.Sprintf("CPU per reset (%s) vs bare kill+spawn", l.name), c.Format("%.1f")+" ms", bc.Format("%.1f")+" ms",
			cr.Format("%.2f"), "≤ 2×", verdict(cr, 2, true))
	}
}

// benchConfig writes a configuration naming the test agent with extra
// YAML and returns its path.
func benchConfig(b *testing.B, name, extra string) string {
	p := filepath.Join(b.TempDir(), name)
	y := fmt.Sprintf("harness:\n  command: [%q, agent]\n", testharnessBin(b)) + extra
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// daemonResets runs b.N resets on each of conc sessions of a fresh daemon
// at once and returns resets per second and machine CPU milliseconds per
// reset.
func daemonResets(b *testing.B, conc int, flags, env []string) resetCost {
	iso := flagIsolation(flags)
	use0 := childrenUsage(b)
	harness := agentCmd(b)
	if slices.Contains(flags, "--config") {
		harness = nil // the configuration names it
	}
	d := startDaemon(b, spec{Flags: flags, Env: env, Harness: harness})
	envs := openSessions(b, d.URL, conc, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	own0 := procCPUFine(b, d.Pid())
	start := time.Now()
	for _, env := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range b.N {
				obs, err := env.Reset(ctx, client.ResetOptions{})
				if err != nil || obs.Done {
					errs <- fmt.Errorf("reset: %v", err)
					return
				}
				if got := obs.Metadata.Isolation; got != iso {
					errs <- fmt.Errorf("reset in %s isolation, want %s", got, iso)
					return
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	own := procCPUFine(b, d.Pid()) - own0
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	closeSessions(envs)
	d.WaitSessions(0)
	d.Stop()
	// The daemon's start and its sessions' opening included.
	c := costSince(use0, childrenUsage(b), conc*b.N, wall)
	c.daemonMS = float64(own.Microseconds()) / 1000 / float64(conc*b.N)
	return c
}

// bareResets is the floor: conc goroutines each b.N times stopping its
// bare agent and spawning the next until ready.
func bareResets(b *testing.B, conc int) resetCost {
	use0 := childrenUsage(b)
	start := time.Now()
	bareLoops(b, conc)
	wall := time.Since(start)
	return costSince(use0, childrenUsage(b), conc*b.N, wall)
}

// childrenUsage is the resource usage of this process's children that
// have ended and been waited for, and of their waited descendants
// (getrusage RUSAGE_CHILDREN): a daemon counts once stopped, with every
// sandbox init, harness and side process it reaped; a bare agent once
// stopped. Unlike /proc/stat it ignores whatever else runs on the machine,
// and it misses kernel workers' share (network namespaces are torn down
// by one).
func childrenUsage(tb testing.TB) syscall.Rusage {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru
}

// resetCost is what n resets cost, from two childrenUsage readings.
type resetCost struct {
	perSec   float64 // resets per second of wall time
	cpuMS    float64 // user and system CPU per reset
	switches float64 // voluntary context switches per reset
	faults   float64 // minor page faults per reset
	daemonMS float64 // the daemon's own CPU per reset, over the resets only (0 for the floor)
}

// costSince is the cost of the n resets done in wall between the
// childrenUsage readings ru0 and ru.
func costSince(ru0, ru syscall.Rusage, n int, wall time.Duration) resetCost {
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	f := float64(n)
	return resetCost{
		perSec:   f / wall.Seconds(),
		cpuMS:    float64(cpu.Microseconds()) / 1000 / f,
		switches: float64(ru.Nvcsw-ru0.Nvcsw) / f,
		faults:   float64(ru.Minflt-ru0.Minflt) / f,
	}
}
