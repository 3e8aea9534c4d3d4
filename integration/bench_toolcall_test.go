package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/client"
)

// harnessMCPEnv reads the bridge's URL and token from the harness's
// environment, as the harness itself gets them.
func harnessMCPEnv(tb testing.TB, pid int) (url, token string) {
	tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		tb.Fatalf("harness environment: %v", err)
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		name, value, _ := strings.Cut(string(kv), "=")
		switch name {
		case "HARNESSD_MCP_URL":
			url = value
		case "HARNESSD_MCP_TOKEN":
			token = value
		}
	}
	if url == "" || token == "" {
		tb.Fatalf("the harness (pid %d) has no HARNESSD_MCP_URL/HARNESSD_MCP_TOKEN", pid)
	}
	return url, token
}

// BenchmarkBridgedToolCall: an MCP tools/call of `echo` through the
// daemon's bridge, made by a client process of its own (benchfloor
// toolcall, with the episode's bridge URL and token, as a harness would),
// against the floor of the same work from that process: the same call over
// stdio to a `testharness tools` it starts itself, plus a bare loopback
// HTTP round trip of a tools/call-sized body to another process (benchfloor
// bare). The client interleaves one call of each path, b.N per repeat;
// repeats times, each with a fresh daemon. The daemon runs in process
// isolation whatever infoLog says: the client stands in for the harness
// from outside it, and a sandboxed harness's bridge is a door inside the
// sandbox's network namespace, which the client cannot reach.
func BenchmarkBridgedToolCall(b *testing.B) {
	var br, fl, dir, ht, ratios []float64
	for rep := 0; rep < repeats; rep++ {
		ctx := context.Background()
		d := startDaemon(b, spec{Flags: append([]string{toolsFlag(b)}, append(infoLevel, isolationProcess...)...), Harness: agentCmd(b)})
		env, err := client.Dial(ctx, d.URL, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
			b.Fatal(err)
		}
		st, err := env.State(ctx)
		if err != nil || st.HarnessPID == 0 {
			b.Fatalf("state: %v %+v", err, st)
		}
		url, token := harnessMCPEnv(b, st.HarnessPID)
		bare := startFloor(b, "bare")
		cmd := exec.Command(benchfloorBin(b), "toolcall", "-bridge", url, "-token", token, "-tools", testharnessBin(b),
			"-floor", "http://"+bare.Addr+"/echo", "-n", strconv.Itoa(b.N))
		cmd.Env = cleanEnv()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("benchfloor toolcall: %v\n%s", err, stderr.String())
		}
		var res struct {
			BridgedUS [2]float64 `json:"bridged_us"`
			DirectUS  [2]float64 `json:"direct_us"`
			HTTPUS    [2]float64 `json:"http_us"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			b.Fatalf("benchfloor toolcall printed %q: %v", out, err)
		}
		floor := res.DirectUS[0] + res.HTTPUS[0]
		br, fl = append(br, res.BridgedUS[0]), append(fl, floor)
		dir, ht = append(dir, res.DirectUS[0]), append(ht, res.HTTPUS[0])
		ratios = append(ratios, res.BridgedUS[0]/floor)
		env.Close()
		bare.stop()
		d.Stop()
	}
	bs, fs, ds, hs, rs := spreadOf(br), spreadOf(fl), spreadOf(dir), spreadOf(ht), spreadOf(ratios)
	b.ReportMetric(bs.Med, "bridged-p50-us")
	b.ReportMetric(rs.Med, "ratio-p50")
	if b.N < 20 {
		return
	}
	summary("bridged tools/call out of process n=%d×%d: bridged p50 %sµs | floor: direct stdio p50 %sµs + bare HTTP p50 %sµs = %sµs | ratio %s (target ≤ 1.5)",
		repeats, b.N, bs.Format("%.0f"), ds.Format("%.0f"), hs.Format("%.0f"), fs.Format("%.0f"), rs.Format("%.2f"))
	ratioRow("bridged tools/call p50 (client process) vs direct stdio + bare HTTP", "µs", bs, fs, rs, 1.5)
}
