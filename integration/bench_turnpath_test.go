package integration

// The turn's hot path (issue 28): CPU per turn of the daemon and of the
// relay floor, and many sessions stepping at once against as many relayed
// connections.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// procCPUFine is a process's CPU time so far in nanoseconds: the sum of
// its threads' run time (/proc/PID/task/*/schedstat, first field). Unlike
// /proc/PID/stat (clock ticks of 10 ms) it resolves one turn's share; a
// thread that exited between two readings would be missed, which a Go
// daemon's threads do not do on this path (they are kept for reuse).
func procCPUFine(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	if err != nil || len(tasks) == 0 {
		tb.Fatalf("no schedstat for pid %d: %v", pid, err)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			tb.Fatalf("%s: %q", t, b)
		}
		sum += time.Duration(ns)
	}
	return sum
}

// benchBaseline is HARNESSD_BENCH_BASELINE: a harnessd binary that the turn
// benchmarks also measure in the same run, for before/after figures.
func benchBaseline() string { return os.Getenv("HARNESSD_BENCH_BASELINE") }

// procSwitches is how many times a process's threads have gone to sleep
// so far (voluntary context switches: futex, epoll and nanosleep waits,
// summed over /proc/PID/task/*/status), a count that the machine's load
// changes far less than CPU time: each hand-off between goroutines on
// different threads costs one or more.
func procSwitches(tb testing.TB, pid int) int64 {
	tb.Helper()
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/status")
	if err != nil || len(tasks) == 0 {
		tb.Fatalf("no status for pid %d: %v", pid, err)
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				sum += n
			}
		}
	}
	return sum
}

// BenchmarkTurnScale: sessions stepping at once against the relay floor
// with as many connections (each its own agent), in alternating phases,
// 4 phases of each per repeat, repeats times (a fresh daemon and relay
// each): turns/s over each phase's wall time, and the daemon's and the
// relay's CPU per turn (procCPUFine). Every connection uses the same raw
// client (write the step frame, read the reply's bytes), as BenchmarkTurn.
// HARNESSD_BENCH_SESSIONS sets the sessions (default 64); b.N is the turns
// per session and phase (at least 4).
func BenchmarkTurnScale(b *testing.B) {
	n := 64
	if v, err := strconv.Atoi(os.Getenv("HARNESSD_BENCH_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	turns := max(4, b.N)
	const phases = 4
	reqFrame, _ := json.Marshal(map[string]any{"type": "step", "data": map[string]any{"message": "reply x"}})
	want, relayWant := []byte(`"response":"x"`), []byte(`"turn_complete"`)
	var dTPS, rTPS, ratio, dCPU, rCPU, cpuRatio []float64
	var bTPS, bRatio, bCPU, bCPURatio []float64 // benchBaseline's daemon
	for rep := 0; rep < repeats; rep++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		d := startDaemon(b, spec{Flags: append([]string{"--max-sessions", strconv.Itoa(n)}, infoLog...), Harness: agentCmd(b)})
		dconns := dialAll(b, ctx, "ws://"+d.Addr+"/ws", n)
		for _, c := range dconns {
			if reply := wsRoundTrip(b, ctx, c, []byte(`{"type":"reset"}`)); !strings.Contains(string(reply), `"observation"`) {
				b.Fatalf("reset: %s", reply)
			}
		}
		replyFrame := wsRoundTrip(b, ctx, dconns[0], reqFrame)
		relay := startFloor(b, "relay", "-agent", testharnessBin(b), "-reply-size", strconv.Itoa(len(replyFrame)))
		rconns := dialAll(b, ctx, "ws://"+relay.Addr+"/", n)
		var bd *daemon
		var bconns []*websocket.Conn
		if bin := benchBaseline(); bin != "" {
			bd = startDaemon(b, spec{Flags: append([]string{"--max-sessions", strconv.Itoa(n)}, infoLog...), Harness: agentCmd(b), Bin: bin})
			bconns = dialAll(b, ctx, "ws://"+bd.Addr+"/ws", n)
			for _, c := range bconns {
				wsRoundTrip(b, ctx, c, []byte(`{"type":"reset"}`))
			}
			stepAll(b, ctx, bconns, reqFrame, want, 2)
		}
		stepAll(b, ctx, dconns, reqFrame, want, 2) // warm up every path
		stepAll(b, ctx, rconns, reqFrame, relayWant, 2)
		var dt, rt, dc, rc, bt, bc time.Duration
		// Whoever steps first in a phase is favoured (an A/A run of one
		// binary as both the baseline and the daemon: 0.97 and 0.85 of
		// the relay first, 0.73 and 0.75 second), so the order rotates.
		steppers := []phaseStepper{
			{d.Pid(), dconns, want, &dt, &dc},
			{relay.Pid(), rconns, relayWant, &rt, &rc},
		}
		if bd != nil {
			steppers = append(steppers, phaseStepper{bd.Pid(), bconns, want, &bt, &bc})
		}
		for phase := range phases {
			for k := range steppers {
				st := steppers[(phase+k)%len(steppers)]
				c0 := procCPUFine(b, st.pid)
				*st.wall += stepAll(b, ctx, st.conns, reqFrame, st.want, turns)
				*st.cpu += procCPUFine(b, st.pid) - c0
			}
		}
		total := float64(phases * n * turns)
		dTPS, rTPS = append(dTPS, total/dt.Seconds()), append(rTPS, total/rt.Seconds())
		ratio = append(ratio, rt.Seconds()/dt.Seconds())
		dCPU, rCPU = append(dCPU, us(dc)/total), append(rCPU, us(rc)/total)
		cpuRatio = append(cpuRatio, float64(dc)/float64(rc))
		if bd != nil {
			bTPS, bRatio = append(bTPS, total/bt.Seconds()), append(bRatio, rt.Seconds()/bt.Seconds())
			bCPU, bCPURatio = append(bCPU, us(bc)/total), append(bCPURatio, float64(bc)/float64(rc))
			for _, c := range bconns {
				c.CloseNow()
			}
			bd.Stop()
		}
		for _, c := range append(dconns, rconns...) {
			c.CloseNow()
		}
		relay.stop()
		d.Stop()
		cancel()
	}
	dt, rt, rr := spreadOf(dTPS), spreadOf(rTPS), spreadOf(ratio)
	dc, rc, cr := spreadOf(dCPU), spreadOf(rCPU), spreadOf(cpuRatio)
	b.ReportMetric(rr.Med, "ratio-relay")
	if len(bTPS) > 0 {
		summary("turn scale baseline %s (same run, alternating): %s turns/s → ratio to the relay %s | daemon CPU per turn %sµs → ratio %s",
			benchBaseline(), spreadOf(bTPS).Format("%.0f"), spreadOf(bRatio).Format("%.2f"), spreadOf(bCPU).Format("%.1f"), spreadOf(bCPURatio).Format("%.2f"))
	}
	summary("turn scale sessions=%d n=%d×%d×%d: harnessd %s turns/s | relay floor %s turns/s → ratio %s (target ≥ 0.9) | daemon CPU per turn %sµs vs relay %sµs → ratio %s (target ≤ 1.5)",
		n, repeats, phases, turns, dt.Format("%.0f"), rt.Format("%.0f"), rr.Format("%.2f"), dc.Format("%.1f"), rc.Format("%.1f"), cr.Format("%.2f"))
	row(fmt.Sprintf("turns/s, %d sessions stepping at once vs the relay", n), dt.Format("%.0f")+" /s", rt.Format("%.0f")+" /s", rr.Format("%.2f"), "≥ 0.9×", verdict(rr, 0.9, false))
	row(fmt.Sprintf("daemon CPU per turn, %d sessions at once vs the relay", n), dc.Format("%.1f")+" µs", rc.Format("%.1f")+" µs", cr.Format("%.2f"), "≤ 1.5×", verdict(cr, 1.5, true))
}

// dialAll opens n WebSocket connections to url.
func dialAll(tb testing.TB, ctx context.Context, url string, n int) []*websocket.Conn {
	tb.Helper()
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			tb.Fatal(err)
		}
		c.SetReadLimit(64 << 20)
		conns[i] = c
	}
	return conns
}

// phaseStepper is one server BenchmarkTurnScale steps in each phase: its
// pid, connections and expected reply, and where its wall and CPU time add
// up.
type phaseStepper struct {
	pid       int
	conns     []*websocket.Conn
	want      []byte
	wall, cpu *time.Duration
}

// stepAll has every connection send turns step frames, one at a time, all
// connections at once, each reply holding want; it returns the wall time.
func stepAll(tb testing.TB, ctx context.Context, conns []*websocket.Conn, frame, want []byte, turns int) time.Duration {
	tb.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range turns {
				err := c.Write(ctx, websocket.MessageText, frame)
				var reply []byte
				if err == nil {
					_, reply, err = c.Read(ctx)
				}
				if err == nil && !strings.Contains(string(reply), string(want)) {
					err = fmt.Errorf("reply %.300s", reply)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("connection %d turn %d: %w", i, t, err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if first != nil {
		tb.Fatal(first)
	}
	return wall
}
