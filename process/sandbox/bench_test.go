package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"

	"github.com/harnessd/harnessd/process/sandbox"
)

// BenchmarkSandboxStart measures a sandbox's start until its harness is
// ready (the test agent's first stdout line) against the same agent started
// bare with os/exec, each the median of 3 repeats, and prints a BENCH line.
// The sandbox side includes everything a session would pay: namespaces, id
// maps, the new root, a door, the harness's fork from the init, and Close.
func BenchmarkSandboxStart(b *testing.B) {
	if r := probeOnce(); !r.OK {
		testbin.Missing(b, "sandbox: %s", r.Detail)
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	const starts = 20
	sandboxed := func() time.Duration {
		r, w, _ := os.Pipe()
		defer r.Close()
		t0 := time.Now()
		ctx := context.Background()
		sb, err := sandbox.Start(ctx, sandbox.Config{Name: "bench", Stdout: w, Seccomp: true,
			Doors: []sandbox.Door{{Name: "mcp"}}, Binds: []sandbox.Bind{{Src: exe, Dst: agentPath}}})
		w.Close()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: []string{agentCommand, "id"}}); err != nil {
			b.Fatal(err)
		}
		if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		sb.Close()
		return d
	}
	bare := func() time.Duration {
		t0 := time.Now()
		cmd := exec.Command(exe, agentCommand, "id")
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		cmd.Wait()
		return d
	}
	median := func(f func() time.Duration) time.Duration {
		ds := make([]time.Duration, starts)
		for i := range ds {
			ds[i] = f()
		}
		slices.Sort(ds)
		return ds[starts/2]
	}
	var sbx, flo, ratios []float64
	for b.Loop() {
		for range 3 {
			s, f := median(sandboxed), median(bare)
			sbx, flo = append(sbx, ms(s)), append(flo, ms(f))
			ratios = append(ratios, float64(s)/float64(f))
		}
	}
	mid := func(v []float64) float64 { c := slices.Clone(v); slices.Sort(c); return c[len(c)/2] }
	b.ReportMetric(mid(sbx), "sandbox-ms")
	b.ReportMetric(mid(flo), "bare-ms")
	fmt.Printf("\nBENCH sandbox start until ready p50 %.2f ms vs bare start %.2f ms: +%.2f ms, ratio %.2f (3 repeats of %d starts: sandbox %.2f–%.2f ms, ratio %.2f–%.2f)\n",
		mid(sbx), mid(flo), mid(sbx)-mid(flo), mid(ratios), starts, slices.Min(sbx), slices.Max(sbx), slices.Min(ratios), slices.Max(ratios))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
