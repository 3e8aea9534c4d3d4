package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
)

// BenchmarkReset: a /ws reset (the previous episode's tree stopped, a fresh
// workspace, the new harness started until ready) against the bare floor of
// the same work: the previous bare agent stopped (stdin closed, SIGKILL,
// wait) and the same agent binary spawned with os/exec until its ready
// line. Interleaved, b.N of each per repeat, repeats times (a fresh daemon
// each). Variants: with a stdio tool server (kept across episodes; every
// reset lists its tools and starts a new bridge with a new token), and with
// a per-episode tool server, whose floor adds the tool server's own
// spawn-until-initialized and kill.
func BenchmarkReset(b *testing.B) {
	th := testharnessBin(b)
	perEpisode := writeConfig(b, fmt.Sprintf(`
harness:
  command: [%q, agent]
tools:
  - name: t
    command: [%q, tools]
    per_episode: true
`, th, th))
	for _, v := range []struct {
		name       string
		s          spec
		perEpisode bool
	}{
		{"no-tools", spec{Flags: infoLog, Harness: agentCmd(b)}, false},
		{"tool-server", spec{Flags: append([]string{toolsFlag(b)}, infoLog...), Harness: agentCmd(b)}, false},
		{"tool-server-per-episode", spec{Flags: append([]string{"--config", perEpisode}, infoLog...)}, true},
	} {
		b.Run(v.name, func(b *testing.B) {
			var r50, r99, f50, ratios []float64
			for rep := 0; rep < repeats; rep++ {
				d := startDaemon(b, v.s)
				ctx := context.Background()
				env, err := client.Dial(ctx, d.URL, nil)
				if err != nil {
					b.Fatal(err)
				}
				for range 5 {
					if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				prev := startDirectAgent(b)
				var prevTools *directAgent
				if v.perEpisode {
					prevTools = spawnToolServer(b)
				}
				var reset, floor samples
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					obs, err := env.Reset(ctx, client.ResetOptions{})
					t1 := time.Now()
					if err != nil || obs.Done {
						b.Fatalf("reset: %v %+v", err, obs)
					}
					prev.stop()
					if prevTools != nil {
						prevTools.stop()
						prevTools = spawnToolServer(b)
					}
					prev = startDirectAgent(b)
					t2 := time.Now()
					reset, floor = append(reset, t1.Sub(t0)), append(floor, t2.Sub(t1))
				}
				prev.stop()
				if prevTools != nil {
					prevTools.stop()
				}
				env.Close()
				d.Stop()
				r50, r99, f50 = append(r50, ms(reset.p50())), append(r99, ms(reset.p99())), append(f50, ms(floor.p50()))
				ratios = append(ratios, float64(reset.p50())/float64(floor.p50()))
			}
			rs, rs99, fs, rt := spreadOf(r50), spreadOf(r99), spreadOf(f50), spreadOf(ratios)
			b.ReportMetric(rs.Med, "reset-p50-ms")
			b.ReportMetric(rt.Med, "ratio-p50")
			if b.N < 10 {
				return
			}
			floorName := "kill previous + spawn-until-ready"
			if v.perEpisode {
				floorName += ", agent and tool server"
			}
			summary("reset/%s n=%d×%d: /ws reset p50 %sms p99 %sms | floor (%s, bare) p50 %sms | ratio p50 %s (target ≤ 1.3)",
				v.name, repeats, b.N, rs.Format("%.1f"), rs99.Format("%.1f"), floorName, fs.Format("%.1f"), rt.Format("%.2f"))
			row("reset/"+v.name+" (test agent, no standby) p50 vs "+floorName, rs.Format("%.1f")+" ms (p99 "+rs99.Format("%.1f")+")",
				fs.Format("%.1f")+" ms", rt.Format("%.2f"), "≤ 1.3×", verdict(rt, 1.3, true))
		})
	}
}
