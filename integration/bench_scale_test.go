package integration

import (
	"context"
	"fmt"
	"sync"
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
// agent binary until ready. The two phases alternate, repeats times, on a
// fresh daemon each.
func BenchmarkResetThroughput(b *testing.B) {
	const conc = 16
	var dRate, fRate, ratios []float64
	for rep := 0; rep < repeats; rep++ {
		d := startDaemon(b, spec{Flags: append([]string{"--max-sessions", fmt.Sprint(conc)}, infoLog...), Harness: agentCmd(b)})
		envs := openSessions(b, d.URL, conc, false)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		var wg sync.WaitGroup
		errs := make(chan error, conc)
		start := time.Now()
		for _, env := range envs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range b.N {
					if obs, err := env.Reset(ctx, client.ResetOptions{}); err != nil || obs.Done {
						errs <- fmt.Errorf("reset: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		dWall := time.Since(start)
		cancel()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		closeSessions(envs)
		d.WaitSessions(0)
		d.Stop()

		start = time.Now()
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				prev := startDirectAgent(b)
				for range b.N {
					prev.stop()
					prev = startDirectAgent(b)
				}
				prev.stop()
			}()
		}
		wg.Wait()
		fWall := time.Since(start)
		dr, fr := float64(conc*b.N)/dWall.Seconds(), float64(conc*b.N)/fWall.Seconds()
		dRate, fRate, ratios = append(dRate, dr), append(fRate, fr), append(ratios, dr/fr)
	}
	ds, fs, rs := spreadOf(dRate), spreadOf(fRate), spreadOf(ratios)
	b.ReportMetric(ds.Med, "resets/s")
	b.ReportMetric(rs.Med, "ratio")
	if b.N < 5 {
		return
	}
	summary("reset throughput sessions=%d n=%d×%d each: %s resets/s vs bare kill+spawn-until-ready at %d at once %s/s → ratio %s (target ≥ 0.9)",
		conc, repeats, b.N, ds.Format("%.0f"), conc, fs.Format("%.0f"), rs.Format("%.2f"))
	row(fmt.Sprintf("resets/s, %d sessions at once, vs bare kill+spawn at %d", conc, conc), ds.Format("%.0f")+" /s", fs.Format("%.0f")+" /s",
		rs.Format("%.2f"), "≥ 0.9×", verdict(rs, 0.9, false))
}

// BenchmarkIdleMemory1024: the daemon's own RSS (harnesses are other
// processes) with 1,024 idle /ws sessions, each reset and stepped once,
// over the same daemon with none (after one warm-up session); also its
// threads and fds per session, and how long opening the sessions took.
// Measured once (memRepeats), not repeats times: opening 1,024 sessions
// takes about 2 minutes on 2 cores, as every connect costs more the more
// sessions are open (BenchmarkConnect); the scale curve gives the
// repeated RSS up to 256 sessions.
func BenchmarkIdleMemory1024(b *testing.B) {
	const n, memRepeats = 1024, 1
	var per, th, fd, open []float64
	for rep := 0; rep < memRepeats; rep++ {
		d := startDaemon(b, spec{Flags: append([]string{"--max-sessions", fmt.Sprint(n)}, infoLog...), Harness: agentCmd(b)})
		closeSessions(openSessions(b, d.URL, 1, true))
		d.WaitSessions(0)
		rss0, threads0, fds0 := daemonCounts(b, d.Pid())
		t0 := time.Now()
		envs := openSessions(b, d.URL, n, true)
		open = append(open, time.Since(t0).Seconds())
		rss, threads, fds := daemonCounts(b, d.Pid())
		per = append(per, float64(rss-rss0)/1024/n)
		th, fd = append(th, float64(threads-threads0)/n), append(fd, float64(fds-fds0)/n)
		closeSessions(envs)
		d.WaitSessions(0)
		d.Stop()
	}
	ps, ts, fs, ops := spreadOf(per), spreadOf(th), spreadOf(fd), spreadOf(open)
	b.ReportMetric(ps.Med, "MiB/session")
	summary("idle memory sessions=%d (×%d): daemon RSS %s MiB per session (target < 0.5) | per session %s threads, %s fds | opening the sessions (8 at a time) took %ss",
		n, memRepeats, ps.Format("%.3f"), ts.Format("%.3f"), fs.Format("%.2f"), ops.Format("%.0f"))
	row(fmt.Sprintf("idle memory per session at %d sessions (daemon RSS, %d run)", n, memRepeats), ps.Format("%.3f")+" MiB", "", "",
		"< 0.5 MiB", verdict(ps, 0.5, true))
}
