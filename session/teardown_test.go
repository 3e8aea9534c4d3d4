package session_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// resourceLedger records what each episode of a session opened and closed
// (session.Options.Trace), keyed by the episode's directory.
type resourceLedger struct {
	mu     sync.Mutex
	opened map[string][]episode.Resource
	closed map[string][]episode.Resource
}

func (l *resourceLedger) trace(ev episode.TraceEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opened == nil {
		l.opened, l.closed = map[string][]episode.Resource{}, map[string][]episode.Resource{}
	}
	switch ev.Op {
	case episode.TraceOpened:
		l.opened[ev.Dir] = append(l.opened[ev.Dir], ev.Resource)
	case episode.TraceClosed:
		l.closed[ev.Dir] = append(l.closed[ev.Dir], ev.Resource)
	}
}

// check fails unless every episode closed each resource it opened exactly
// once, and closed nothing it had not opened; it returns how many episodes
// there were and the resources they opened, all told.
func (l *resourceLedger) check(t *testing.T) (episodes int, resources map[episode.Resource]int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	resources = map[episode.Resource]int{}
	for dir, opened := range l.opened {
		count := map[episode.Resource]int{}
		for _, r := range opened {
			count[r]++
			resources[r]++
		}
		for _, r := range l.closed[dir] {
			count[r]--
		}
		for r, n := range count {
			switch {
			case n > 0:
				t.Errorf("episode %s: %s opened but never closed (opened %v, closed %v)", dir, r, opened, l.closed[dir])
			case n < 0:
				t.Errorf("episode %s: %s closed %d more times than opened (opened %v, closed %v)", dir, r, -n, opened, l.closed[dir])
			}
		}
	}
	for dir := range l.closed {
		if _, ok := l.opened[dir]; !ok {
			t.Errorf("episode %s closed resources it never opened: %v", dir, l.closed[dir])
		}
	}
	return len(l.opened), resources
}

// TestEveryEndingClosesEachResourceOnce: whichever way an episode ends —
// finished by its turn, a failed start, discarded half-built, replaced by a
// reset, retired behind a standby's handover, or closed with its session
// (the daemon's drain closes every session this way) — each resource it
// opened is closed exactly once, in process and in sandbox isolation.
func TestEveryEndingClosesEachResourceOnce(t *testing.T) {
	endings := []struct {
		name string
		edit func(*config.Config)
		args []string
		play func(t *testing.T, s *session.Session)
		// want are resources that must have been opened at least once, so
		// the ending cannot pass by opening nothing.
		want []episode.Resource
	}{
		{name: "finish", play: func(t *testing.T, s *session.Session) {
			reset(t, s)
			if obs := step(t, s, "done"); !obs.Done {
				t.Fatalf("the episode did not end: %+v", obs.Metadata)
			}
		}, want: []episode.Resource{episode.ResourceHarness, episode.ResourceBridge}},
		{name: "startup-failure", args: []string{"--crash-on-start", "2"}, play: func(t *testing.T, s *session.Session) {
			obs, err := s.Reset(context.Background(), session.ResetOptions{})
			if err != nil || obs.Metadata.ErrorType != wire.FailureStartupFailed {
				t.Fatalf("reset: %v %+v", err, obs)
			}
		}, want: []episode.Resource{episode.ResourceHarness}},
		{name: "discard", edit: func(c *config.Config) {
			c.Tools = append(c.Tools, config.ToolConfig{Name: "broken", Command: []string{"/nonexistent/tool-server"}, PerEpisode: true})
		}, play: func(t *testing.T, s *session.Session) {
			if _, err := s.Reset(context.Background(), session.ResetOptions{}); err == nil {
				t.Fatal("a reset whose tool server cannot start succeeded")
			}
		}, want: []episode.Resource{episode.ResourceDirectories, episode.ResourceToolSources}},
		{name: "reset", play: func(t *testing.T, s *session.Session) {
			reset(t, s)
			step(t, s, "hello")
			reset(t, s)
		}, want: []episode.Resource{episode.ResourceHarness, episode.ResourceBridge}},
		{name: "retire", edit: func(c *config.Config) { c.Warm = 1 }, play: func(t *testing.T, s *session.Session) {
			first := reset(t, s).Metadata.Standby
			second := reset(t, s).Metadata.Standby
			if !first || !second {
				t.Fatal("the resets were not handed standbys")
			}
		}, want: []episode.Resource{episode.ResourceHarness, episode.ResourceBridge}},
		{name: "close", play: func(t *testing.T, s *session.Session) {
			reset(t, s)
			step(t, s, "hello")
		}, want: []episode.Resource{episode.ResourceHarness, episode.ResourceBridge}},
	}
	for _, iso := range []string{config.IsolationProcess, config.IsolationSandbox} {
		for _, e := range endings {
			t.Run(iso+"/"+e.name, func(t *testing.T) {
				if iso == config.IsolationSandbox {
					if r := sandboxProbe(); !r.OK {
						testbin.Missing(t, "sandbox: %s", r.Detail)
					}
				}
				cfg := testConfig(t, e.args...)
				cfg.Isolation = iso
				if e.edit != nil {
					e.edit(cfg)
				}
				if err := cfg.Normalize(); err != nil {
					t.Fatal(err)
				}
				var ledger resourceLedger
				s, err := session.NewSession(session.Options{Config: cfg, Adapters: adapters(t), Supervisor: supervisor(t), Trace: ledger.trace})
				if err != nil {
					t.Fatal(err)
				}
				e.play(t, s)
				if err := s.Close(context.Background()); err != nil && e.name != "discard" {
					t.Errorf("close: %v", err)
				}
				n, opened := ledger.check(t)
				if n == 0 {
					t.Fatal("no episode opened anything")
				}
				want := e.want
				if iso == config.IsolationSandbox {
					want = append(want, episode.ResourceSandbox)
				}
				for _, r := range want {
					if opened[r] == 0 {
						t.Errorf("no episode opened %s (opened: %s)", r, resourceList(opened))
					}
				}
			})
		}
	}
}

func resourceList(m map[episode.Resource]int) string {
	var out []string
	for r, n := range m {
		out = append(out, fmt.Sprintf("%s×%d", r, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
