package integration

// Benchmarks of the real daemon as ratios against a floor measured in the
// same run (docs/benchmarks.md; `make bench`). Nothing here asserts on
// time: the figures are reported (b.ReportMetric and a BENCH summary line
// each), and a benchmark fails only on errors.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/client"
)

// samples collects durations.
type samples []time.Duration

func (s samples) pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := append(samples(nil), s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	i := int(p*float64(len(c))+0.5) - 1
	return c[min(max(i, 0), len(c)-1)]
}

func (s samples) p50() time.Duration { return s.pct(0.50) }
func (s samples) p99() time.Duration { return s.pct(0.99) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// summary prints one line that docs/benchmarks.md is written from.
func summary(format string, a ...any) {
	fmt.Printf("\nBENCH "+format+"\n", a...)
}

// directAgent is the test agent driven over its pipes with no daemon.
type directAgent struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	turn int
}

func startDirectAgent(tb testing.TB) *directAgent {
	tb.Helper()
	cmd := exec.Command(testharnessBin(tb), "agent")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HARNESSD_PROTOCOL=1"}
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	a := &directAgent{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}
	if line, err := a.out.ReadString('\n'); err != nil || !strings.Contains(line, `"ready"`) {
		tb.Fatalf("agent not ready: %q %v", line, err)
	}
	return a
}

// roundTrip writes one message line and reads up to turn_complete.
func (a *directAgent) roundTrip(tb testing.TB, content string) {
	a.turn++
	msg, _ := json.Marshal(map[string]any{"type": "message", "turn": a.turn, "content": content})
	if _, err := a.in.Write(append(msg, '\n')); err != nil {
		tb.Fatal(err)
	}
	for {
		line, err := a.out.ReadString('\n')
		if err != nil {
			tb.Fatal(err)
		}
		if strings.Contains(line, `"turn_complete"`) {
			return
		}
	}
}

// spawnToolServer starts `testharness tools` directly and waits for its
// answer to MCP initialize: the tool server's own spawn-until-ready.
func spawnToolServer(tb testing.TB) *directAgent {
	tb.Helper()
	cmd := exec.Command(testharnessBin(tb), "tools")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	a := &directAgent{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`+"\n")
	if line, err := a.out.ReadString('\n'); err != nil || !strings.Contains(line, `"result"`) {
		tb.Fatalf("tool server did not initialize: %q %v", line, err)
	}
	return a
}

func (a *directAgent) stop() {
	a.in.Close()
	a.cmd.Process.Kill()
	a.cmd.Wait()
}

// echoServer is a bare coder/websocket server on loopback that answers
// every frame with a frame of replySize bytes.
func echoServer(tb testing.TB, replySize int) (*websocket.Conn, func()) {
	tb.Helper()
	reply := make([]byte, replySize)
	for i := range reply {
		reply[i] = 'x'
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(64 << 20)
		for {
			_, _, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), websocket.MessageText, reply); err != nil {
				return
			}
		}
	}))
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	return c, func() { c.CloseNow(); srv.Close() }
}

// turnElapsed returns the elapsed times of the last n turns from the
// daemon's "turn complete" log records (JSON, at debug; elapsed in seconds).
func turnElapsed(log string, n int) samples {
	var out samples
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"msg":"turn complete"`) {
			continue
		}
		var rec struct{ Elapsed float64 }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Elapsed > 0 {
			out = append(out, time.Duration(rec.Elapsed*float64(time.Second)))
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// rssKiB reads a process's resident set size.
func rssKiB(tb testing.TB, pid int) int {
	tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}

// settledRSS samples the daemon's RSS until it stops changing for a while
// (the runtime returns freed memory lazily) and returns the last value.
func settledRSS(tb testing.TB, pid int) int {
	last, stable := rssKiB(tb, pid), 0
	for i := 0; i < 100 && stable < 5; i++ {
		time.Sleep(20 * time.Millisecond)
		cur := rssKiB(tb, pid)
		if cur == last {
			stable++
		} else {
			stable = 0
		}
		last = cur
	}
	return last
}

// BenchmarkIdleSessionMemory: the daemon's RSS (its own process only: the
// harnesses and tool servers are other processes) with N idle sessions,
// each connected over /ws with a live episode, against the same daemon with
// none.
func BenchmarkIdleSessionMemory(b *testing.B) {
	const n = 32
	for _, v := range []struct {
		name  string
		flags []string
	}{
		{"no-tools", nil},
		{"tool-server", []string{toolsFlag(b)}},
	} {
		b.Run(v.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				d := startDaemon(b, spec{Flags: append([]string{"--max-sessions", strconv.Itoa(n)}, v.flags...), Harness: agentCmd(b)})
				ctx := context.Background()
				// One session first, closed again: the daemon's code paths
				// and buffers are warm before the baseline.
				warm, err := client.Dial(ctx, d.URL, nil)
				if err != nil {
					b.Fatal(err)
				}
				warm.Reset(ctx, client.ResetOptions{})
				warm.Step(ctx, "reply warm")
				warm.Close()
				d.WaitSessions(0)
				base := settledRSS(b, d.Pid())
				envs := make([]*client.Env, n)
				for j := range envs {
					env, err := client.Dial(ctx, d.URL, nil)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
						b.Fatal(err)
					}
					if _, err := env.Step(ctx, "reply hello"); err != nil {
						b.Fatal(err)
					}
					envs[j] = env
				}
				full := settledRSS(b, d.Pid())
				per := float64(full-base) / n / 1024
				b.ReportMetric(per, "MiB/session")
				summary("memory/%s sessions=%d: daemon RSS %.1f MiB with 0 sessions, %.1f MiB with %d idle sessions → %.2f MiB per session (budget < 5 MiB)",
					v.name, n, float64(base)/1024, float64(full)/1024, n, per)
				for _, env := range envs {
					env.Close()
				}
				d.Stop()
			}
		})
	}
}

// BenchmarkConcurrentSessions: 64 sessions at once against one daemon
// (--max-sessions 64, GOMAXPROCS=2), each: connect, reset, 10 turns (one
// with a tool call through the bridge), close. It fails on any error and
// reports the wall time and the step latency under load.
func BenchmarkConcurrentSessions(b *testing.B) {
	const sessions, turns = 64, 10
	for i := 0; i < b.N; i++ {
		d := startDaemon(b, spec{Flags: []string{"--max-sessions", strconv.Itoa(sessions), toolsFlag(b)}, Harness: agentCmd(b), Env: []string{"GOMAXPROCS=2"}})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		var (
			mu    sync.Mutex
			steps samples
			errs  []error
			wg    sync.WaitGroup
		)
		fail := func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		start := time.Now()
		for s := 0; s < sessions; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				env, err := client.Dial(ctx, d.URL, nil)
				if err != nil {
					fail(err)
					return
				}
				defer env.Close()
				if obs, err := env.Reset(ctx, client.ResetOptions{}); err != nil || obs.Done {
					fail(fmt.Errorf("reset: %v", err))
					return
				}
				for t := 0; t < turns; t++ {
					msg, want := fmt.Sprintf("reply s%d t%d", s, t), fmt.Sprintf("s%d t%d", s, t)
					if t == turns/2 {
						msg, want = `tool add {"a":2,"b":3}`, "add -> 5"
					}
					t0 := time.Now()
					obs, err := env.Step(ctx, msg)
					dt := time.Since(t0)
					if err != nil || obs.ResponseText() != want || obs.Done {
						fail(fmt.Errorf("session %d turn %d: %v %q", s, t, err, obs.ResponseText()))
						return
					}
					mu.Lock()
					steps = append(steps, dt)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		cancel()
		if len(errs) > 0 {
			b.Fatalf("%d errors, first: %v", len(errs), errs[0])
		}
		d.WaitSessions(0)
		if code := d.Stop(); code != 0 {
			b.Fatalf("daemon exit code %d", code)
		}
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(us(steps.p50()), "step-p50-us")
		b.ReportMetric(us(steps.p99()), "step-p99-us")
		summary("concurrent sessions=%d turns=%d (one tool call each) cores=%d: 0 errors, wall %.2fs, %d steps, step p50 %.1fms p99 %.1fms under load",
			sessions, turns, runtime.NumCPU(), wall.Seconds(), len(steps), ms(steps.p50()), ms(steps.p99()))
	}
}
