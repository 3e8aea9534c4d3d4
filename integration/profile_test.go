package integration

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/harness"
	_ "github.com/harnessd/harnessd/harness/jsonl"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/server"
)

// BenchmarkTurnInProcess is BenchmarkTurnOverhead's daemon path with the
// server in the benchmark's own process, so that a CPU profile shows what a
// turn costs on the daemon's side (the client's share is in it too):
//
//	go test -run '^$' -bench TurnInProcess -benchtime 3000x -cpuprofile cpu.out ./integration/
//	go tool pprof -top -cum integration.test cpu.out
func BenchmarkTurnInProcess(b *testing.B) {
	cfg := &harness.Config{Harness: harness.HarnessConfig{Command: agentCmd(b)}}
	cfg.Workspace.Root = b.TempDir()
	if err := cfg.Normalize(); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sup, err := process.NewSupervisor(process.Options{Subreaper: process.ModeOff, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer sup.Close(context.Background(), 0)
	srv, err := server.New(server.Options{Config: cfg, Supervisor: sup, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	env, err := client.Dial(ctx, "http://"+ln.Addr().String(), nil)
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
