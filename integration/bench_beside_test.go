package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
)

// BenchmarkAgentBesideResets tells whether an agent costs more CPU per
// start under the daemon because of how the daemon starts it, or because
// of the work running beside it. BenchmarkResetThroughput cannot: its
// floor and its levels run one after the other, minutes apart, on a
// machine whose CPU per start drifts more than the difference. Here bare
// kill+spawn loops (the floor's, b.N starts each of 8 loops) run alone, then
// in the same seconds as 8 sessions of a daemon resetting back to back
// (sandbox, then process isolation), alternating, repeats times; the bare
// agents' CPU per start is read from getrusage of this process's waited
// children, which the daemon's agents are not (the daemon is reaped only
// after the reading):
//
//	go test -run '^$' -bench AgentBesideResets -benchtime 100x ./integration/
func BenchmarkAgentBesideResets(b *testing.B) {
	const loops, sessions = 8, 8
	levels := []struct {
		name  string
		flags []string
	}{{"sandbox", isolationSandbox}, {"process", isolationProcess}}
	alone, beside := []float64{}, map[string][]float64{}
	for rep := 0; rep < repeats; rep++ {
		alone = append(alone, bareCPUPerStart(b, loops))
		for _, l := range levels {
			stop := resetStorm(b, sessions, l.flags)
			beside[l.name] = append(beside[l.name], bareCPUPerStart(b, loops))
			stop()
		}
	}
	a := spreadOf(alone)
	b.ReportMetric(a.Med, "ms/start-alone")
	b.ReportMetric(spreadOf(beside["sandbox"]).Med, "ms/start-beside-sandbox")
	if b.N < 5 {
		return
	}
	for _, l := range levels {
		bs := spreadOf(beside[l.name])
		summary("bare agent's CPU per start, alone vs beside %d sessions resetting (%s), %d loops × %d starts, %d repeats alternating: %s ms vs %s ms",
			sessions, l.name, loops, b.N, repeats, a.Format("%.2f"), bs.Format("%.2f"))
	}
}

// bareCPUPerStart runs loops bare kill+spawn loops of b.N starts each and
// returns the agents' CPU per start in milliseconds.
func bareCPUPerStart(b *testing.B, loops int) float64 {
	use0, start := childrenUsage(b), time.Now()
	bareLoops(b, loops)
	return costSince(use0, childrenUsage(b), loops*(b.N+1), time.Since(start)).cpuMS
}

// bareLoops is bareResets' work without its measurement: loops
// goroutines each starting a bare agent and b.N times stopping it and
// starting the next.
func bareLoops(b *testing.B, loops int) {
	var wg sync.WaitGroup
	for range loops {
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
}

// resetStorm starts a daemon with flags and sessions resetting back to
// back until the returned stop, which also stops the daemon.
func resetStorm(b *testing.B, sessions int, flags []string) (stop func()) {
	d := startDaemon(b, spec{Flags: append([]string{"--max-sessions", "16"}, flags...), Harness: agentCmd(b)})
	envs := openSessions(b, d.URL, sessions, false)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	resets := make(chan struct{}, sessions)
	for _, env := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil && ctx.Err() == nil {
					b.Errorf("reset: %v", err)
					return
				}
				select {
				case resets <- struct{}{}:
				default:
				}
			}
		}()
	}
	// The storm is on once every session has reset at least once more.
	for range sessions {
		<-resets
	}
	return func() {
		cancel()
		wg.Wait()
		closeSessions(envs)
		d.WaitSessions(0)
		d.Stop()
	}
}
