package pty

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// The adapter has no fork mechanism: a launch from a fork state fails its
// start rather than starting the harness fresh as if it had continued.
func TestStartRefusesForkState(t *testing.T) {
	l := &harness.Launch{Command: []string{"/bin/true"}, Fork: &harness.ForkState{Mechanism: harness.ForkLine, Data: json.RawMessage(`{}`)}}
	err := New().Start(context.Background(), l)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureStartupFailed {
		t.Fatalf("start from a fork state: %v, want startup_failed", err)
	}
}
