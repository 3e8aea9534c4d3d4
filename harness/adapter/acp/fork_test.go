package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// An agent that does not advertise loadSession (the fake ACP agent) cannot
// fork by resume, and a sibling cannot be started from a session it could
// not load; a fork state of another mechanism is refused too.
func TestForkNeedsLoadSession(t *testing.T) {
	a := started(t)
	if a.Info().LoadSession {
		t.Fatal("the fake agent advertises loadSession: this test needs one that does not")
	}
	if _, err := a.ForkState(context.Background()); !errors.Is(err, harness.ErrForkUnsupported) {
		t.Fatalf("fork: %v, want ErrForkUnsupported", err)
	}
	for _, c := range []struct {
		fs   harness.ForkState
		want string
	}{
		{harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"s1"}`)}, "does not advertise loadSession"},
		{harness.ForkState{Mechanism: harness.ForkLine, Data: json.RawMessage(`{}`)}, `not "line"`},
		{harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{}`)}, "not the acp adapter's"},
	} {
		l := launch(t)
		l.Fork = &c.fs
		err := New().Start(context.Background(), l)
		if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, c.want) {
			t.Errorf("%s %s: %v, want startup_failed saying %q", c.fs.Mechanism, c.fs.Data, err, c.want)
		}
	}
}
