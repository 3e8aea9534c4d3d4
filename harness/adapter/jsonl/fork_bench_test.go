package jsonl

import (
	"context"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

func benchLaunch(b *testing.B) *harness.Launch {
	return adaptertest.Launch(b, testbin.Path(b, "testharness"), "agent")
}

// parentAfter starts the test agent and runs n turns that keep a string
// and grow the history.
func parentAfter(b *testing.B, n int) *Adapter {
	a := New()
	if err := a.Start(context.Background(), benchLaunch(b)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Stop(context.Background()) })
	for i := 1; i <= n; i++ {
		if _, err := a.Turn(context.Background(), harness.TurnInput{Number: i, Message: "remember a string the turn keeps;;count"}, func(wire.Event) {}); err != nil {
			b.Fatal(err)
		}
	}
	return a
}

// BenchmarkForkState is the line protocol's fork round trip between turns:
// the fork message and the test agent's fork_state answer (its state after
// 20 turns).
func BenchmarkForkState(b *testing.B) {
	a := parentAfter(b, 20)
	for b.Loop() {
		if _, err := a.ForkState(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartRestored is a sibling's start from that state (spawn,
// ready, restore, restored), against BenchmarkStartFresh, the same start
// without a state.
func BenchmarkStartRestored(b *testing.B) {
	fs, err := parentAfter(b, 20).ForkState(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	benchStart(b, fs)
}

// BenchmarkStartFresh is the floor of BenchmarkStartRestored.
func BenchmarkStartFresh(b *testing.B) { benchStart(b, nil) }

func benchStart(b *testing.B, fs *harness.ForkState) {
	l := benchLaunch(b)
	l.Fork = fs
	for b.Loop() {
		a := New()
		if err := a.Start(context.Background(), l); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		a.Stop(context.Background())
		b.StartTimer()
	}
}
