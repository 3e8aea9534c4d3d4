package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// BenchmarkLongEpisodeMemory: one episode of 60,000 turns (`reply tN` to
// the test agent over a raw /ws client) against the real daemon at its
// default log level, and the daemon's RSS (settled) after 1,000 turns and
// after 60,000: what the daemon keeps per past turn. Target: the two within
// 5 MiB (issue 28). Also the daemon's CPU (user + system, from /proc) per
// turn over turns 1,001–10,000 and 51,001–60,000: flat over the episode is
// the target. Two variants: without a record_dir (past turns beyond
// the session's bounded window are gone) and with one (they are in the
// record file). Run with -benchtime 1x: one iteration is repeats episodes
// of each variant.
func BenchmarkLongEpisodeMemory(b *testing.B) {
	const early, turns = 1000, 60000
	for _, v := range []struct {
		name   string
		record bool
	}{{"no-record-dir", false}, {"record-dir", true}} {
		b.Run(v.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				var at1k, atEnd, growth, perTurn, cpuEarly, cpuLate []float64
				for rep := 0; rep < repeats; rep++ {
					flags := append([]string{}, infoLog...)
					if v.record {
						flags = append(flags, "--record-dir", b.TempDir())
					}
					d := startDaemon(b, spec{Flags: flags, Harness: agentCmd(b)})
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
					c, _, err := websocket.Dial(ctx, "ws://"+d.Addr+"/ws", nil)
					if err != nil {
						b.Fatal(err)
					}
					c.SetReadLimit(64 << 20)
					if reply := wsRoundTrip(b, ctx, c, []byte(`{"type":"reset"}`)); !strings.Contains(string(reply), `"observation"`) {
						b.Fatalf("reset: %s", reply)
					}
					var r1k int
					var cpu [4]time.Duration
					t0 := time.Now()
					for n := 1; n <= turns; n++ {
						frame, _ := json.Marshal(map[string]any{"type": "step", "data": map[string]any{"message": fmt.Sprintf("reply t%d", n)}})
						reply := wsRoundTrip(b, ctx, c, frame)
						if !strings.Contains(string(reply), fmt.Sprintf(`"response":"t%d"`, n)) || strings.Contains(string(reply), `"done":true`) {
							b.Fatalf("turn %d: %s", n, reply)
						}
						switch n {
						case early:
							r1k = settledRSS(b, d.Pid())
							cpu[0] = procCPU(b, d.Pid())
						case 10 * early:
							cpu[1] = procCPU(b, d.Pid())
						case turns - 9*early:
							cpu[2] = procCPU(b, d.Pid())
						case turns:
							cpu[3] = procCPU(b, d.Pid())
						}
					}
					elapsed := time.Since(t0)
					rEnd := settledRSS(b, d.Pid())
					at1k, atEnd = append(at1k, float64(r1k)/1024), append(atEnd, float64(rEnd)/1024)
					growth = append(growth, float64(rEnd-r1k)/1024)
					perTurn = append(perTurn, us(elapsed)/turns)
					cpuEarly = append(cpuEarly, us(cpu[1]-cpu[0])/(9*early))
					cpuLate = append(cpuLate, us(cpu[3]-cpu[2])/(9*early))
					c.CloseNow()
					cancel()
					d.Stop()
				}
				a, e, g, pt := spreadOf(at1k), spreadOf(atEnd), spreadOf(growth), spreadOf(perTurn)
				ce, cl := spreadOf(cpuEarly), spreadOf(cpuLate)
				b.ReportMetric(g.Med, "rss-growth-MiB")
				summary("long episode %s (×%d): daemon RSS after %d turns %s MiB, after %d turns %s MiB, growth %s MiB (target <= 5: %s) | turn %sµs mean | daemon CPU per turn over turns 1,001–10,000 %sµs, over 51,001–60,000 %sµs",
					v.name, repeats, early, a.Format("%.1f"), turns, e.Format("%.1f"), g.Format("%.1f"), verdict(g, 5, true), pt.Format("%.0f"),
					ce.Format("%.0f"), cl.Format("%.0f"))
				row(fmt.Sprintf("long episode memory, %s: daemon RSS growth from turn %d to %d (%d run)", v.name, early, turns, repeats),
					g.Format("%.1f")+" MiB", "", "", "<= 5 MiB", verdict(g, 5, true))
			}
		})
	}
}

// procCPU is a process's user and system CPU time so far (/proc/PID/stat,
// in clock ticks).
func procCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	// comm may contain spaces and parentheses: fields start after the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		tb.Fatalf("short /proc/%d/stat: %q", pid, b)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64) // fields 14 and 15 overall
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}
