package integration

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
)

// BenchmarkResetDiskQuota measures what the default disk quota
// (limits.disk unset: 10 GiB) adds to a reset: daemons at each isolation
// level with and without it (limits.disk: 0), reset in alternation with
// BenchmarkResetIsolation's gap between resets standing for an episode's
// turns, so load drifts hit all alike.
func BenchmarkResetDiskQuota(b *testing.B) {
	needQuota(b)
	type level struct{ iso, disk string }
	levels := []level{{"process", ""}, {"process", "0"}, {"sandbox", ""}, {"sandbox", "0"}}
	name := func(l level) string {
		if l.disk == "" {
			return l.iso + "+quota"
		}
		return l.iso
	}
	envs := map[string]*client.Env{}
	ctx := context.Background()
	for _, l := range levels {
		y := fmt.Sprintf("name: bench\nharness:\n  command: [%q, agent]\n", testharnessBin(b))
		if l.disk != "" {
			y += "limits: {disk: " + l.disk + "}\n"
		}
		d := startDaemon(b, spec{Flags: []string{"--isolation", l.iso, "--config", writeConfig(b, y)}})
		defer d.Stop()
		env, err := client.Dial(ctx, d.URL, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer env.Close()
		for range 5 {
			if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		envs[name(l)] = env
	}
	took := map[string][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, l := range levels {
			b.StopTimer()
			time.Sleep(episodeGap)
			b.StartTimer()
			t0 := time.Now()
			obs, err := envs[name(l)].Reset(ctx, client.ResetOptions{})
			if err != nil || obs.Done {
				b.Fatalf("%s reset: %v %+v", name(l), err, obs)
			}
			took[name(l)] = append(took[name(l)], time.Since(t0))
		}
	}
	b.StopTimer()
	p50 := func(s []time.Duration) time.Duration {
		c := append([]time.Duration(nil), s...)
		sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
		return c[len(c)/2]
	}
	for _, iso := range []string{"process", "sandbox"} {
		with, without := p50(took[iso+"+quota"]), p50(took[iso])
		b.ReportMetric(float64(with)/1e6, iso+"-quota-p50-ms")
		b.ReportMetric(float64(without)/1e6, iso+"-p50-ms")
		fmt.Printf("\nBENCH reset with the disk quota (%s): p50 %.2f ms, without %.2f ms, added %+.2f ms, %d resets each\n",
			iso, float64(with)/1e6, float64(without)/1e6, float64(with-without)/1e6, len(took[iso]))
	}
}
