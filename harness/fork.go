package harness

import (
	"context"
	"encoding/json"
	"errors"
)

// The mechanisms by which a sibling's harness continues from its parent's
// state (ForkState.Mechanism, and what a fork reports per sibling).
const (
	// ForkResume is the agent's own resume (Claude Code --resume with
	// --fork-session), started against the sibling's copy of HOME, which
	// holds the agent's session files. No turn runs again.
	ForkResume = "resume"
	// ForkLine is the line protocol's fork message: the parent's harness
	// hands its state over as JSON ({"type":"fork"} answered by
	// {"type":"fork_state","state":...}), and the sibling's harness, started
	// fresh, gets it back ({"type":"restore","state":...} answered by
	// {"type":"restored"}) before its first turn.
	ForkLine = "line"
	// ForkReplay is any harness: a fresh harness is driven through the
	// parent's turns while the model gateway and the tool bridge answer
	// from the parent's recorded calls. Adapters take no part in it: the
	// session drives it, so no ForkState ever carries this mechanism.
	ForkReplay = "replay"
)

// ForkState is what a running harness hands a sibling so that the
// sibling's harness continues from its state. The zero value carries no
// state and names no mechanism; Start rejects it in Launch.Fork.
type ForkState struct {
	// Mechanism is ForkResume or ForkLine.
	Mechanism string `json:"mechanism"`
	// Data is adapter-specific: the jsonl adapter's is the harness's own
	// state (any JSON it answered fork with); the claude adapter's is
	// {"session_id": "..."}. It is opaque to everything but the adapter
	// kind that made it, which alone reads it back in Start.
	Data json.RawMessage `json:"data,omitempty"`
}

// Forker is an optional interface of an Adapter whose harness can hand
// over its state between turns. The session finds it by type assertion;
// an adapter without it can only be forked by replay.
type Forker interface {
	// ForkState asks the running harness, between turns (never while a
	// Turn runs: the session serialises them), for its state. It returns
	// an error wrapping ErrForkUnsupported when this harness cannot (a
	// jsonl harness that does not answer fork in time or answers an
	// error; an agent without a resume, or one started without session
	// files); the harness is then still usable for its next turn. Other
	// errors (the harness is not running, ctx ended) are returned as they
	// are.
	ForkState(ctx context.Context) (*ForkState, error)
}

// ErrForkUnsupported says a harness cannot hand over its state: the
// sibling's harness needs another mechanism (replay).
var ErrForkUnsupported = errors.New("harness: this harness cannot hand over its state")
