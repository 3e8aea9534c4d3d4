package integration

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsRoundTrip writes one frame and reads one reply frame.
func wsRoundTrip(tb testing.TB, ctx context.Context, c *websocket.Conn, frame []byte) []byte {
	if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
		tb.Fatal(err)
	}
	_, reply, err := c.Read(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return reply
}

// BenchmarkTurn: a /ws step through harnessd to the test agent (`reply x`)
// against two floors, interleaved one call of each path per iteration, b.N
// iterations per repeat, repeats times (a fresh daemon and floors each):
//
//   - the relay floor: benchfloor relay, a separate process doing only
//     pipe-to-agent + WebSocket-to-client for the same agent binary, its
//     reply padded to the size of harnessd's observation frame;
//   - the component floor: a direct pipe round trip to the same agent from
//     the benchmark's process plus a bare coder/websocket echo inside the
//     benchmark's process with the same frame sizes (the floor of earlier
//     runs: cheaper than any daemon can be, as its echo crosses no process).
//
// Every WebSocket path uses the same raw client (write the frame, read the
// reply's bytes), so client-side decoding is in none of them.
//
// With HARNESSD_BENCH_BASELINE naming another harnessd binary (an earlier
// build), a daemon of that binary is stepped in the same loop too and its
// figures printed beside (before/after in one run).
func BenchmarkTurn(b *testing.B) {
	const msg = "reply x"
	reqFrame, _ := json.Marshal(map[string]any{"type": "step", "data": map[string]any{"message": msg}})
	want := []byte(`"response":"x"`)
	var step50, step99, relay50, comp50, rRelay, rComp, over, dCPU, rCPU, rCPUs []float64
	var base50, baseR, baseCPU, baseCPUR, baseSw []float64 // HARNESSD_BENCH_BASELINE's daemon (benchBaseline)
	var dSw, rSw []float64                                 // voluntary context switches per turn
	for rep := 0; rep < repeats; rep++ {
		ctx := context.Background()
		d := startDaemon(b, spec{Flags: infoLog, Harness: agentCmd(b)})
		c, _, err := websocket.Dial(ctx, "ws://"+d.Addr+"/ws", nil)
		if err != nil {
			b.Fatal(err)
		}
		c.SetReadLimit(64 << 20)
		if reply := wsRoundTrip(b, ctx, c, []byte(`{"type":"reset"}`)); !strings.Contains(string(reply), `"observation"`) {
			b.Fatalf("reset: %s", reply)
		}
		replyFrame := wsRoundTrip(b, ctx, c, reqFrame)
		if !strings.Contains(string(replyFrame), string(want)) {
			b.Fatalf("step: %s", replyFrame)
		}
		relay := startFloor(b, "relay", "-agent", testharnessBin(b), "-reply-size", strconv.Itoa(len(replyFrame)))
		rc, _, err := websocket.Dial(ctx, "ws://"+relay.Addr+"/", nil)
		if err != nil {
			b.Fatal(err)
		}
		rc.SetReadLimit(64 << 20)
		var bd *daemon
		var bc *websocket.Conn
		if bin := benchBaseline(); bin != "" {
			bd = startDaemon(b, spec{Flags: infoLog, Harness: agentCmd(b), Bin: bin})
			if bc, _, err = websocket.Dial(ctx, "ws://"+bd.Addr+"/ws", nil); err != nil {
				b.Fatal(err)
			}
			bc.SetReadLimit(64 << 20)
			wsRoundTrip(b, ctx, bc, []byte(`{"type":"reset"}`))
		}
		agent := startDirectAgent(b)
		echo, closeEcho := echoServer(b, len(replyFrame))
		relayWant := []byte(`"turn_complete"`)
		for range 20 { // warm up every path
			wsRoundTrip(b, ctx, c, reqFrame)
			wsRoundTrip(b, ctx, rc, reqFrame)
			agent.roundTrip(b, msg)
			wsRoundTrip(b, ctx, echo, reqFrame)
			if bc != nil {
				wsRoundTrip(b, ctx, bc, reqFrame)
			}
		}
		var daemon, relayed, pipe, ws, based samples
		var bc0, bcpu time.Duration
		var bs0 int64
		if bd != nil {
			bc0, bs0 = procCPUFine(b, bd.Pid()), procSwitches(b, bd.Pid())
		}
		dc0, rc0 := procCPUFine(b, d.Pid()), procCPUFine(b, relay.Pid())
		ds0, rs0 := procSwitches(b, d.Pid()), procSwitches(b, relay.Pid())
		for i := 0; i < b.N; i++ {
			if bc != nil {
				t := time.Now()
				if reply := wsRoundTrip(b, ctx, bc, reqFrame); !strings.Contains(string(reply), string(want)) {
					b.Fatalf("baseline step: %s", reply)
				}
				based = append(based, time.Since(t))
			}
			t0 := time.Now()
			reply := wsRoundTrip(b, ctx, c, reqFrame)
			t1 := time.Now()
			rreply := wsRoundTrip(b, ctx, rc, reqFrame)
			t2 := time.Now()
			agent.roundTrip(b, msg)
			t3 := time.Now()
			wsRoundTrip(b, ctx, echo, reqFrame)
			t4 := time.Now()
			if !strings.Contains(string(reply), string(want)) || !strings.Contains(string(rreply), string(relayWant)) {
				b.Fatalf("step: %s / relay: %s", reply, rreply)
			}
			daemon, relayed = append(daemon, t1.Sub(t0)), append(relayed, t2.Sub(t1))
			pipe, ws = append(pipe, t3.Sub(t2)), append(ws, t4.Sub(t3))
		}
		dcpu, rcpu := procCPUFine(b, d.Pid())-dc0, procCPUFine(b, relay.Pid())-rc0
		dSw = append(dSw, float64(procSwitches(b, d.Pid())-ds0)/float64(b.N))
		rSw = append(rSw, float64(procSwitches(b, relay.Pid())-rs0)/float64(b.N))
		if bd != nil {
			bcpu = procCPUFine(b, bd.Pid()) - bc0
			baseSw = append(baseSw, float64(procSwitches(b, bd.Pid())-bs0)/float64(b.N))
			base50, baseR = append(base50, us(based.p50())), append(baseR, float64(based.p50())/float64(relayed.p50()))
			baseCPU, baseCPUR = append(baseCPU, us(bcpu)/float64(b.N)), append(baseCPUR, float64(bcpu)/float64(rcpu))
			bc.CloseNow()
			bd.Stop()
		}
		dCPU, rCPU = append(dCPU, us(dcpu)/float64(b.N)), append(rCPU, us(rcpu)/float64(b.N))
		rCPUs = append(rCPUs, float64(dcpu)/float64(rcpu))
		comp := pipe.p50() + ws.p50()
		step50, step99 = append(step50, us(daemon.p50())), append(step99, us(daemon.p99()))
		relay50, comp50 = append(relay50, us(relayed.p50())), append(comp50, us(comp))
		rRelay = append(rRelay, float64(daemon.p50())/float64(relayed.p50()))
		rComp = append(rComp, float64(daemon.p50())/float64(comp))
		over = append(over, us(daemon.p50()-relayed.p50()))
		rc.CloseNow()
		c.CloseNow()
		closeEcho()
		agent.stop()
		relay.stop()
		d.Stop()
	}
	s50, s99, rl, cp := spreadOf(step50), spreadOf(step99), spreadOf(relay50), spreadOf(comp50)
	rr, rcmp, ov := spreadOf(rRelay), spreadOf(rComp), spreadOf(over)
	b.ReportMetric(s50.Med, "step-p50-us")
	b.ReportMetric(rr.Med, "ratio-relay")
	b.ReportMetric(rcmp.Med, "ratio-component")
	dcpu, rcpu, rcpuR := spreadOf(dCPU), spreadOf(rCPU), spreadOf(rCPUs)
	b.ReportMetric(dcpu.Med, "daemon-cpu-us/turn")
	b.ReportMetric(rcpuR.Med, "cpu-ratio-relay")
	if b.N < 20 {
		return
	}
	if len(base50) > 0 {
		summary("turn baseline %s (same run, interleaved): /ws step p50 %sµs → ratio to the relay %s | daemon CPU per turn %sµs → ratio %s | %s thread sleeps per turn",
			benchBaseline(), spreadOf(base50).Format("%.0f"), spreadOf(baseR).Format("%.2f"), spreadOf(baseCPU).Format("%.1f"), spreadOf(baseCPUR).Format("%.2f"), spreadOf(baseSw).Format("%.2f"))
	}
	summary("turn CPU n=%d×%d (the processes' own threads, /proc/PID/task/*/schedstat): daemon %sµs per turn | relay floor %sµs → ratio %s (target ≤ 1.5) | thread sleeps per turn (voluntary context switches): daemon %s, relay %s",
		repeats, b.N, dcpu.Format("%.1f"), rcpu.Format("%.1f"), rcpuR.Format("%.2f"), spreadOf(dSw).Format("%.2f"), spreadOf(rSw).Format("%.2f"))
	summary("turn n=%d×%d: /ws step p50 %sµs p99 %sµs | relay floor (separate process) p50 %sµs → ratio %s (target ≤ 1.2) | component floor (pipe + in-process ws echo) p50 %sµs → ratio %s | overhead over the relay p50 %sµs",
		repeats, b.N, s50.Format("%.0f"), s99.Format("%.0f"), rl.Format("%.0f"), rr.Format("%.2f"), cp.Format("%.0f"), rcmp.Format("%.2f"), ov.Format("%.0f"))
	// The breakdown needs the per-turn "turn complete" line, which is at
	// debug: a daemon of its own, not one of the measured repeats.
	lastAdapter, lastPipe := adapterBreakdown(b, reqFrame, msg, b.N)
	if lastAdapter > 0 {
		summary("turn breakdown (a separate daemon at debug level, %d turns): the adapter's round trip inside the daemon (from its log) p50 %.0fµs vs the direct pipe p50 %.0fµs",
			b.N, us(lastAdapter), us(lastPipe))
	}
	ratioRow("turn: /ws step p50 vs relay floor process", "µs", s50, rl, rr, 1.2)
	ratioRow("turn: daemon CPU per turn vs relay floor process", "µs", dcpu, rcpu, rcpuR, 1.5)
	row("turn: /ws step p50 vs component floor", s50.Format("%.0f")+" µs", cp.Format("%.0f")+" µs", rcmp.Format("%.2f"), "", "")
}

// adapterBreakdown runs n steps against a daemon at debug level and as many
// direct pipe round trips to the agent, and returns the adapter's round trip
// inside the daemon (p50, from its "turn complete" log lines) and the pipe's.
func adapterBreakdown(b *testing.B, reqFrame []byte, msg string, n int) (adapter, pipe time.Duration) {
	ctx := context.Background()
	d := startDaemon(b, spec{Flags: isolationFlags(), Harness: agentCmd(b)})
	defer d.Stop()
	c, _, err := websocket.Dial(ctx, "ws://"+d.Addr+"/ws", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 20)
	wsRoundTrip(b, ctx, c, []byte(`{"type":"reset"}`))
	agent := startDirectAgent(b)
	defer agent.stop()
	var pipes samples
	for i := 0; i < n+20; i++ {
		wsRoundTrip(b, ctx, c, reqFrame)
		t0 := time.Now()
		agent.roundTrip(b, msg)
		if i >= 20 {
			pipes = append(pipes, time.Since(t0))
		}
	}
	a := turnElapsed(d.Log(), n)
	if len(a) == 0 {
		return 0, 0
	}
	return a.p50(), pipes.p50()
}
