package session_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/session"
)

// A configured per-episode tool server's sandbox is made with the spare
// episode's own, while the previous episode runs, not by the reset that
// takes the spare; the server itself starts with the reset and answers.
func TestPerEpisodeToolSandboxIsMadeWithTheSpare(t *testing.T) {
	if r := sandboxProbe(); !r.OK {
		testbin.Missing(t, "sandbox: %s", r.Detail)
	}
	var (
		mu    sync.Mutex
		ahead int // tool sandboxes opened by an episode without an id yet
	)
	trace := func(ev episode.TraceEvent) {
		if ev.Resource == episode.ResourceToolSandbox && ev.Op == episode.TraceOpened && ev.Episode == "" {
			mu.Lock()
			ahead++
			mu.Unlock()
		}
	}
	cfg := testConfig(t)
	cfg.Isolation = config.IsolationSandbox
	cfg.Tools[0].PerEpisode = true
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	s, err := session.NewSession(session.Options{Config: cfg, Adapters: adapters(t), Supervisor: supervisor(t), Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	for i := range 3 {
		reset(t, s)
		if got := responseText(t, s, `tool add {"a":2,"b":3}`); !strings.Contains(got, "5") {
			t.Fatalf("reset %d: the per-episode tool server answered %q", i, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if ahead == 0 {
		t.Fatal("no per-episode tool sandbox was made with a spare episode, before its reset")
	}
}
