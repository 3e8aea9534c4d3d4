package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// forkData is the acp adapter's ForkState.Data.
type forkData struct {
	// SessionID is the parent's ACP session.
	SessionID string `json:"session_id"`
}

// ForkState implements harness.Forker for an agent that advertises
// agentCapabilities.loadSession: between turns it names the episode's
// session (mechanism harness.ForkResume), which a sibling started with
// Launch.Fork against its copy of the parent's HOME opens with
// session/load instead of session/new. Without loadSession the error
// wraps harness.ErrForkUnsupported. Whether an agent's session/load finds
// the session from another working directory is the agent's: presets say
// which agents are verified (agents.Preset.Fork).
func (a *Adapter) ForkState(ctx context.Context) (*harness.ForkState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	info, active, c := a.info, a.turnActive, a.c
	a.mu.Unlock()
	switch {
	case c == nil || !a.Alive():
		return nil, harness.Fail(wire.FailureHarnessExited, "harness is not running")
	case active:
		return nil, errors.New("acp: fork state asked for during a turn")
	case !info.LoadSession:
		return nil, fmt.Errorf("the agent does not advertise loadSession: %w", harness.ErrForkUnsupported)
	}
	data, _ := json.Marshal(forkData{SessionID: info.SessionID})
	return &harness.ForkState{Mechanism: harness.ForkResume, Data: data}, nil
}

// loadTarget checks a Launch.Fork against the agent's capabilities and
// returns the parent's session to load.
func loadTarget(fs *harness.ForkState, info *Info) (string, error) {
	if fs.Mechanism != harness.ForkResume {
		return "", fmt.Errorf("the acp adapter continues only from a %q fork state, not %q", harness.ForkResume, fs.Mechanism)
	}
	var d forkData
	if err := json.Unmarshal(fs.Data, &d); err != nil || d.SessionID == "" {
		return "", fmt.Errorf("the fork state is not the acp adapter's (%s)", fs.Data)
	}
	if !info.LoadSession {
		return "", errors.New("the agent does not advertise loadSession: it cannot open its parent's session")
	}
	return d.SessionID, nil
}

var _ harness.Forker = (*Adapter)(nil)
