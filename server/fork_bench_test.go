package server

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
)

// BenchmarkForkSurfaces measures what the server adds to a fork: the /ws
// fork frame's round trip (the Go client's Fork) less the session's own
// fork time (harnessd_fork_seconds, from its Forked event) — reserving
// the slots, registering each sibling, the console and metrics, the reply
// — for G = 1, 8 and 32 siblings of the test agent after one turn: the
// median and spread of forkRepeats forks each (every sibling closed after
// its fork). The whole fork's time is printed beside it.
func BenchmarkForkSurfaces(b *testing.B) {
	const forkRepeats = 5
	ts := forkServer(b, 40)
	ctx := context.Background()
	parent, err := client.Dial(ctx, ts.url, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer parent.Close()
	if _, err := parent.Reset(ctx, client.ResetOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := parent.Step(ctx, "reply one"); err != nil {
		b.Fatal(err)
	}
	inSession := func() float64 {
		f, _ := strconv.ParseFloat(metricValue(b, ts, "", "harnessd_fork_seconds_sum"), 64)
		return f
	}
	for b.Loop() {
		for _, g := range []int{1, 8, 32} {
			var outside, whole []float64
			for range forkRepeats {
				s0 := inSession()
				t0 := time.Now()
				sibs, err := parent.Fork(ctx, client.ForkOptions{Count: g})
				d := time.Since(t0).Seconds()
				if err != nil {
					b.Fatal(err)
				}
				outside = append(outside, (d-(inSession()-s0))*1000)
				whole = append(whole, d*1000)
				for _, s := range sibs {
					if s.Err != nil {
						b.Fatalf("sibling: %v", s.Err)
					}
					post(b, ts.url+"/close", `{"session_id":"`+s.SessionID+`"}`)
				}
			}
			mo, so := medSpread(outside)
			mw, sw := medSpread(whole)
			fmt.Printf("\nBENCH fork-surfaces G=%d server %.2f ms ±%.2f outside session.Fork, whole fork frame %.0f ms ±%.0f\n", g, mo, so, mw, sw)
			b.ReportMetric(mo, fmt.Sprintf("G%d-server-ms", g))
		}
	}
}
