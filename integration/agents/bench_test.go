package agents_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
	presets "github.com/harnessd/harnessd/harness/agents"
	"github.com/harnessd/harnessd/internal/benchrow"
)

// benchRepeats is how many daemons each agent's figures are measured on,
// benchResets how many resets each (after a cold one).
const benchRepeats, benchResets = 3, 3

// BenchmarkAgentReset: for every real agent preset installed in
// node_modules, /ws resets through `harnessd serve --agent NAME` against
// the fake LLM (engine mode behind the gateway, a stdio tool server): for a
// real agent a reset is the agent's start. benchResets resets per repeat after one
// cold reset that is not counted, benchRepeats repeats on a fresh daemon
// each. After every reset, interleaved, the bare floor: the same agent
// command (the harness's argv, environment and working directory, read from
// /proc while the episode is live) started directly with os/exec until it
// is ready by the same test as the adapter's, then its process group
// killed: for ACP agents the answers to initialize and session/new (with no
// MCP server: a lower bound, since harnessd's session/new names the
// bridge), for Claude Code the answer to the initialize control request.
// The counts are fixed: run it with -benchtime 1x (go test would first run
// it with b.N = 1, doubling the cost of every agent's starts).
func BenchmarkAgentReset(b *testing.B) {
	s, deps := benchSuite(b)
	for _, p := range shippedPresets() {
		b.Run(p.Name, func(b *testing.B) {
			if !benchable(b, s, deps, p) {
				return
			}
			s.agentResetRow(b, p)
		})
	}
}

// BenchmarkAgentResetWarm times the reset of each real agent with warm: 1:
// the reset hands over an agent that started while the previous episode
// ran. Between resets the benchmark waits for twice the agent's cold start
// (an episode's turns); a reset not handed a standby is counted apart.
func BenchmarkAgentResetWarm(b *testing.B) {
	s, deps := benchSuite(b)
	for _, p := range shippedPresets() {
		b.Run(p.Name, func(b *testing.B) {
			if !benchable(b, s, deps, p) {
				return
			}
			d := s.serve(b, p, "--model-upstream", "engine", "--warm", "1")
			defer d.cmd.Process.Signal(syscall.SIGTERM)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			env, err := client.Dial(ctx, d.url, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer env.Close()
			t0 := time.Now()
			if obs, err := env.Reset(ctx, client.ResetOptions{}); err != nil || obs.Done {
				b.Fatalf("first reset: %v %+v", err, obs)
			}
			gap := 2*time.Since(t0) + time.Second
			var warm durations
			cold := 0
			for range benchResets {
				time.Sleep(gap)
				t0 := time.Now()
				obs, err := env.Reset(ctx, client.ResetOptions{})
				dt := time.Since(t0)
				if err != nil || obs.Done {
					b.Fatalf("reset: %v %+v", err, obs)
				}
				if !obs.Metadata.Standby {
					cold++
					continue
				}
				warm = append(warm, dt)
			}
			if len(warm) == 0 {
				b.Fatalf("no reset was handed a standby (gap %s)", gap)
			}
			fmt.Printf("\nBENCH agent-reset-warm/%s n=%d: /ws reset handed a standby p50 %.2f ms max %.2f ms (target <= 2 ms); %d not handed one; gap %.1fs\n",
				p.Name, len(warm), float64(warm.pct(0.5))/1e6, float64(warm.pct(1))/1e6, cold, gap.Seconds())
			benchrow.Row(fmt.Sprintf("reset with a standby: %s (warm: 1), %d resets", p.Name, len(warm)),
				fmt.Sprintf("%.2f ms (max %.2f)", float64(warm.pct(0.5))/1e6, float64(warm.pct(1))/1e6), "", "", "≤ 2 ms", verdictMs(warm.pct(0.5), 2*time.Millisecond))
		})
	}
}

// verdictMs is met or missed for one measured figure against a bound.
func verdictMs(d, bound time.Duration) string {
	if d <= bound {
		return "**met**"
	}
	return "**missed**"
}

// shippedPresets are the presets whose npm packages integration/agents pins.
func shippedPresets() []*presets.Preset {
	return []*presets.Preset{presets.ClaudeACP(), presets.ClaudeCode(), presets.Codex(), presets.Copilot(),
		presets.Gemini(), presets.OpenCode(), presets.Qwen()}
}

// benchable skips (or fails under CI=true) an agent that is not installed.
func benchable(b *testing.B, s *suite, deps map[string]string, p *presets.Preset) bool {
	if _, ok := deps[p.Package]; !ok {
		b.Skipf("%s is not pinned in package.json", p.Package)
		return false
	}
	if _, ok := presets.Locate(p, s.agentsDir, string(filepath.ListSeparator)); !ok {
		missing(b, "%s is not installed in %s: run `make agents`", p.Program, s.agentsDir)
		return false
	}
	return true
}

// benchSuite starts the fake LLM (engine mode) the agent benchmarks share.
func benchSuite(b *testing.B) (*suite, map[string]string) {
	deps := pinned(b)
	if _, err := exec.LookPath("node"); err != nil {
		missing(b, "node is not on PATH: the npm-installed agents cannot run")
	}
	return newSuite(b), deps
}

// agentResetRow measures p's resets without a standby against its bare
// start and prints the row.
func (s *suite) agentResetRow(b *testing.B, p *presets.Preset) {
	var r50, r99, f50, ratios []float64
	for rep := 0; rep < benchRepeats; rep++ {
		reset, floor := s.agentResets(b, p, benchResets)
		r50, r99 = append(r50, sec(reset.pct(0.5))), append(r99, sec(reset.pct(0.99)))
		if len(floor) > 0 {
			f50 = append(f50, sec(floor.pct(0.5)))
			ratios = append(ratios, float64(reset.pct(0.5))/float64(floor.pct(0.5)))
		}
	}
	rs, rs99 := benchrow.Of(r50), benchrow.Of(r99)
	b.ReportMetric(rs.Med, "reset-p50-s")
	what := fmt.Sprintf("reset: %s (real agent start, no standby), %d×%d", p.Name, benchRepeats, benchResets)
	got := rs.Format("%.2f") + " s (p99 " + rs99.Format("%.2f") + ")"
	if len(f50) == 0 {
		fmt.Printf("\nBENCH agent-reset/%s n=%d×%d: /ws reset p50 %ss p99 %ss | no bare floor (readiness not well defined for adapter %s)\n",
			p.Name, benchRepeats, benchResets, rs.Format("%.2f"), rs99.Format("%.2f"), p.Adapter)
		benchrow.Row(what, got, "", "", "", "")
		return
	}
	fs, rt := benchrow.Of(f50), benchrow.Of(ratios)
	fmt.Printf("\nBENCH agent-reset/%s n=%d×%d: /ws reset p50 %ss p99 %ss | bare start of the same command until ready p50 %ss | ratio %s (target ≤ 1.3)\n",
		p.Name, benchRepeats, benchResets, rs.Format("%.2f"), rs99.Format("%.2f"), fs.Format("%.2f"), rt.Format("%.2f"))
	benchrow.Row(what, got, fs.Format("%.2f")+" s (bare start until ready)", rt.Format("%.2f"), "≤ 1.3×", benchrow.Verdict(rt, 1.3, true))
}

func sec(d time.Duration) float64 { return d.Seconds() }

// durations are samples of one figure.
type durations []time.Duration

func (ds durations) pct(p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	c := append(durations(nil), ds...)
	for i := 1; i < len(c); i++ { // insertion sort: a handful of samples
		for j := i; j > 0 && c[j] < c[j-1]; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
	i := int(p*float64(len(c))+0.5) - 1
	return c[min(max(i, 0), len(c)-1)]
}

// agentResets starts a daemon for p and times n resets after a cold one,
// each followed by one bare start of the same command (none when the
// adapter's readiness has no bare equivalent here).
func (s *suite) agentResets(b *testing.B, p *presets.Preset, n int) (reset, floor durations) {
	d := s.serve(b, p, "--model-upstream", "engine")
	// Stopped at the end of its repeat, not of the benchmark: the idle
	// agents of earlier repeats would load the next ones (the cleanup
	// serve registered still waits for its exit).
	defer d.cmd.Process.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env, err := client.Dial(ctx, d.url, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	if obs, err := env.Reset(ctx, client.ResetOptions{}); err != nil || obs.Done {
		b.Fatalf("cold reset: %v %+v", err, obs)
	}
	for range n {
		t0 := time.Now()
		obs, err := env.Reset(ctx, client.ResetOptions{})
		dt := time.Since(t0)
		if err != nil || obs.Done {
			b.Fatalf("reset: %v %+v", err, obs)
		}
		reset = append(reset, dt)
		st, err := env.State(ctx)
		if err != nil || st.HarnessPID == 0 {
			b.Fatalf("state: %v %+v", err, st)
		}
		// In sandbox isolation the state's pid is the sandbox's init: the
		// agent is the process below it that has the episode's variables.
		if f, ok := bareStart(b, p, withModelEnv(st.HarnessPID)); ok {
			floor = append(floor, f)
		}
	}
	return reset, floor
}

// bareStart starts the command of the live harness pid directly (same argv,
// environment and working directory) until ready, kills its process group
// and returns how long it took to be ready; false when the adapter's
// readiness has no bare equivalent here.
func bareStart(b *testing.B, p *presets.Preset, pid int) (time.Duration, bool) {
	var hello []string // request lines; ready once each got its answer
	switch p.Adapter {
	case "acp":
		hello = []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`,
			"", // session/new, once the working directory is known
		}
	case "claude":
		hello = []string{`{"type":"control_request","request_id":"bench-1","request":{"subtype":"initialize","hooks":null}}`}
	default:
		return 0, false
	}
	proc := "/proc/" + strconv.Itoa(pid)
	argv := readNul(b, proc+"/cmdline")
	environ := readNul(b, proc+"/environ")
	cwd, err := os.Readlink(proc + "/cwd")
	if err != nil || len(argv) == 0 {
		b.Fatalf("harness %d: argv %q, cwd: %v", pid, argv, err)
	}
	if p.Adapter == "acp" {
		sn, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/new",
			"params": map[string]any{"cwd": cwd, "mcpServers": []any{}}})
		hello[1] = string(sn)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = environ, cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatalf("bare start of %q: %v", argv, err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		in.Close()
		cmd.Wait()
	}()
	lines := bufio.NewReaderSize(out, 1<<20)
	for i, req := range hello {
		if _, err := io.WriteString(in, req+"\n"); err != nil {
			b.Fatalf("bare %s: write: %v", p.Name, err)
		}
		id := map[string]string{"acp": strconv.Itoa(i + 1), "claude": "bench-1"}[p.Adapter]
		for {
			line, err := lines.ReadBytes('\n')
			if err != nil {
				b.Fatalf("bare %s: no answer to %.60s…: %v\nstderr: %s", p.Name, req, err, tail(stderr.String()))
			}
			done, rpcErr := answers(line, p.Adapter, id)
			if rpcErr != "" {
				b.Fatalf("bare %s: %.60s… answered with an error: %s", p.Name, req, rpcErr)
			}
			if done {
				break
			}
		}
	}
	return time.Since(t0), true
}

// answers reports whether line is the answer to request id (an ACP
// JSON-RPC response, or Claude's control_response), and the error it
// carries if it is an ACP error.
func answers(line []byte, adapter, id string) (bool, string) {
	var m struct {
		ID       json.RawMessage `json:"id"`
		Result   json.RawMessage `json:"result"`
		Error    json.RawMessage `json:"error"`
		Type     string          `json:"type"`
		Response struct {
			RequestID string `json:"request_id"`
		} `json:"response"`
	}
	if json.Unmarshal(line, &m) != nil {
		return false, ""
	}
	if adapter == "claude" {
		return m.Type == "control_response" && m.Response.RequestID == id, ""
	}
	if string(m.ID) != id {
		return false, ""
	}
	if m.Error != nil {
		return true, string(m.Error)
	}
	return m.Result != nil, ""
}

func readNul(b *testing.B, name string) []string {
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
