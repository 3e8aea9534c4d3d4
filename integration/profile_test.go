package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/jsonl"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/server"
)

// inProcessServer serves harnessd's server package for the test agent in
// the benchmark's own process (with maxSessions, 0: the default) and
// returns its base URL, so that a CPU profile shows the daemon's side.
func inProcessServer(b testing.TB, maxSessions int) string {
	cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: agentCmd(b)}}}
	cfg.Workspace.Root = b.TempDir()
	if err := cfg.Normalize(); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sup, err := process.NewSupervisor(process.Options{Subreaper: process.ModeOff, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sup.Close(context.Background(), 0) })
	adapters := &harness.Registry{}
	if err := adapters.Add(jsonl.Name, jsonl.Factory); err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg, Adapters: adapters, Supervisor: sup, Logger: log, MaxSessions: maxSessions})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	return "http://" + ln.Addr().String()
}

// BenchmarkTurnInProcess is BenchmarkTurn's daemon path with the
// server in the benchmark's own process, so that a CPU profile shows what a
// turn costs on the daemon's side (the client's share is in it too):
//
//	go test -run '^$' -bench TurnInProcess -benchtime 3000x -cpuprofile cpu.out ./integration/
//	go tool pprof -top -cum integration.test cpu.out
//
// Its server is inProcessServer; BenchmarkConnectInProcess and
// BenchmarkResetsInProcess profile the other missed targets the same way.
func BenchmarkTurnInProcess(b *testing.B) {
	url := inProcessServer(b, 0)
	ctx := context.Background()
	env, err := client.Dial(ctx, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
		b.Fatal(err)
	}
	var steps samples
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		obs, err := env.Step(ctx, "reply x")
		steps = append(steps, time.Since(t0))
		if err != nil || obs.ResponseText() != "x" {
			b.Fatalf("step: %v", err)
		}
	}
	b.StopTimer()
	b.ReportMetric(us(steps.p50()), "step-p50-us")
}

// BenchmarkBridgeStart breaks down what a reset with a tool server adds:
// listing the (already running) upstream's tools into a catalog, and
// serving that catalog on a fresh loopback bridge, against a bare listener.
func BenchmarkBridgeStart(b *testing.B) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	sup, err := process.NewSupervisor(process.Options{Subreaper: process.ModeOff, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer sup.Close(context.Background(), 0)
	ctx := context.Background()
	src := bridge.NewStdioSource(bridge.StdioSpec{Name: "t", Command: []string{testharnessBin(b), "tools"},
		Env: process.DefaultEnviron(nil), CallTimeout: time.Minute, StopGrace: time.Second}, sup, log)
	if err := src.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer src.Close(ctx)
	var catalog, serve, listen samples
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		cat, err := bridge.NewCatalog(ctx, []bridge.Source{src}, bridge.CatalogOptions{})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		srv, err := bridge.Serve(cat, bridge.ServerOptions{Logger: log})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		srv.Close(ctx)
		t3 := time.Now()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ln.Close()
		t4 := time.Now()
		catalog, serve, listen = append(catalog, t1.Sub(t0)), append(serve, t2.Sub(t1)), append(listen, t4.Sub(t3))
	}
	b.StopTimer()
	b.ReportMetric(ms(catalog.p50()), "catalog-p50-ms")
	b.ReportMetric(ms(serve.p50()), "serve-p50-ms")
	if b.N >= 10 {
		summary("bridge-start n=%d: catalog (tools/list of a running stdio tool server) p50 %.2fms + bridge serve p50 %.2fms, vs a bare listener p50 %.2fms",
			b.N, ms(catalog.p50()), ms(serve.p50()), ms(listen.p50()))
	}
}

// BenchmarkConnectInProcess is BenchmarkConnect's /ws path (dial, a state
// frame, its answer) with the server in the benchmark's process, with 0 and
// 64 sessions open, for a CPU profile of the accept path:
//
//	go test -run '^$' -bench ConnectInProcess -benchtime 200x -cpuprofile cpu.out ./integration/
func BenchmarkConnectInProcess(b *testing.B) {
	for _, open := range []int{0, 64} {
		b.Run(fmt.Sprintf("sessions=%d", open), func(b *testing.B) {
			url := inProcessServer(b, open+8)
			envs := openSessions(b, url, open, false)
			defer closeSessions(envs)
			ws := "ws" + strings.TrimPrefix(url, "http") + "/ws"
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := firstFrame(ctx, ws, []byte(`{"type":"state"}`)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkResetsInProcess is BenchmarkResetThroughput's daemon phase (16
// sessions resetting at once, b.N resets each) with the server in the
// benchmark's process, for a CPU profile of concurrent resets:
//
//	go test -run '^$' -bench ResetsInProcess -benchtime 10x -cpuprofile cpu.out ./integration/
func BenchmarkResetsInProcess(b *testing.B) {
	const conc = 16
	url := inProcessServer(b, conc)
	envs := openSessions(b, url, conc, false)
	defer closeSessions(envs)
	ctx := context.Background()
	b.ResetTimer()
	eachAtOnce(b, envs, func(env *client.Env) error {
		_, err := env.Reset(ctx, client.ResetOptions{})
		return err
	})
}

// eachAtOnce runs do b.N times for each of envs, the envs at once, and
// fails b on the first error.
func eachAtOnce(b *testing.B, envs []*client.Env, do func(*client.Env) error) {
	var wg sync.WaitGroup
	errs := make(chan error, len(envs))
	for _, env := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range b.N {
				if err := do(env); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTurnScaleInProcess is BenchmarkTurnScale's daemon phase (64
// sessions stepping at once, b.N turns each) with the server in the
// benchmark's process, for a CPU profile of the turn path at scale:
//
//	go test -run '^$' -bench TurnScaleInProcess -benchtime 200x -cpuprofile cpu.out ./integration/
func BenchmarkTurnScaleInProcess(b *testing.B) {
	const conc = 64
	url := inProcessServer(b, conc)
	envs := openSessions(b, url, conc, false)
	defer closeSessions(envs)
	ctx := context.Background()
	for _, env := range envs {
		if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	eachAtOnce(b, envs, func(env *client.Env) error {
		obs, err := env.Step(ctx, "reply x")
		if err == nil && obs.ResponseText() != "x" {
			err = fmt.Errorf("step answered %q", obs.ResponseText())
		}
		return err
	})
}
