package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// A harness that never says it is ready gets a message naming the timeout,
// the knob, the usual cause and its stderr, instead of "context deadline
// exceeded".
func TestStartupTimeoutMessageNamesTheKnob(t *testing.T) {
	cfg := &config.Config{
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{"sh", "-c", "echo warming up >&2; exec sleep 60"}, StartupTimeout: units.Duration(300 * time.Millisecond), StopGrace: units.Duration(200 * time.Millisecond)}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
	}
	s := newSession(t, cfg)
	obs, err := s.Reset(context.Background(), session.ResetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := obs.Metadata
	if !obs.Done || m.ErrorType != wire.FailureStartupFailed {
		t.Fatalf("observation: %+v", m)
	}
	for _, w := range []string{"within 300ms", "harness.startup_timeout", "--startup-timeout", "flush=True", "python3 -u", "stderr tail:\nwarming up"} {
		if !strings.Contains(m.Error, w) {
			t.Errorf("error %q lacks %q", m.Error, w)
		}
	}
	if strings.Contains(m.Error, "context deadline exceeded") {
		t.Errorf("error still says %q", m.Error)
	}
}
