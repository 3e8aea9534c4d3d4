package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/wire"
)

// MaxForkCount bounds the siblings of one fork.
const MaxForkCount = 64

// Fork mechanisms: how a sibling's harness comes to the parent's state
// (harness.ForkResume, harness.ForkLine, harness.ForkReplay).
const (
	// ForkAuto picks the best the harness allows: its own resume, else the
	// line protocol's fork message, else replay.
	ForkAuto = ""
	// ForkResume: the agent's own resume against the sibling's copy of HOME.
	ForkResume = "resume"
	// ForkLine: the line protocol's fork and restore messages.
	ForkLine = "line"
	// ForkReplay: a fresh harness driven through the parent's turns, the
	// doors answering from the parent's records.
	ForkReplay = "replay"
)

// Errors of Fork. They leave the parent usable.
var (
	// ErrForkBusy: a turn (or reset) of the parent is running.
	ErrForkBusy = errors.New("fork: the episode is between no turns (a turn or reset is running); fork between turns")
	// ErrForkUnavailable: the requested fork cannot be made for this
	// episode (the wrapped message says why and what would allow it).
	ErrForkUnavailable = errors.New("fork unavailable")
)

// ForkOptions say which siblings Fork makes.
type ForkOptions struct {
	// Count is how many siblings, 1 to MaxForkCount.
	Count int
	// AtTurn is the turn after which the siblings start: 0 means the
	// current (last ended) turn; an earlier turn needs checkpoints
	// (episode.checkpoints) or the replay mechanism.
	AtTurn int
	// Mechanism is ForkAuto or one of ForkResume, ForkLine, ForkReplay.
	Mechanism string
	// Observer returns the observer of each sibling's session; nil, or a
	// nil result, means none.
	Observer func(sessionID string) Observer
}

// Sibling is one session a fork made.
type Sibling struct {
	// Session is the sibling's session, ready for its next step; nil when
	// this sibling failed (Err).
	Session *Session
	// SessionID and EpisodeID name the sibling.
	SessionID, EpisodeID string
	// Mechanism is how its harness reached the parent's state.
	Mechanism string
	// Observation is its reset-like observation.
	Observation *wire.Observation
	// Err is why this sibling failed (a divergence in replay, a harness
	// that did not restore); the others are unaffected.
	Err error
}

// forkOrigin is where a forked session came from.
type forkOrigin struct {
	sessionID, episodeID string
	atTurn               int
}

// ForkedFrom reports the parent session, its episode and the turn this
// session was forked at; all zero for a session that was not forked.
func (s *Session) ForkedFrom() (sessionID, episodeID string, atTurn int) {
	return s.forked.sessionID, s.forked.episodeID, s.forked.atTurn
}

// checkForkOptions refuses options no fork can serve.
func checkForkOptions(o ForkOptions) error {
	if o.Count < 1 || o.Count > MaxForkCount {
		return fmt.Errorf("fork: count %d out of range (1 to %d)", o.Count, MaxForkCount)
	}
	if o.AtTurn < 0 {
		return fmt.Errorf("fork: at_turn %d is negative (0 means the current turn)", o.AtTurn)
	}
	switch o.Mechanism {
	case ForkAuto, ForkResume, ForkLine, ForkReplay:
		return nil
	}
	return fmt.Errorf("fork: unknown mechanism %q (resume, line, replay, or empty for the best available)", o.Mechanism)
}

// Fork makes opts.Count sibling sessions of the current episode, between
// turns: each its own session and episode (ids, bridge token, gateway key,
// sandbox, doors and directories) continuing from the parent's state after
// turn opts.AtTurn. The parent goes on unchanged. A sibling that fails is
// reported in its Sibling.Err; Fork's error is for a fork that could not
// start at all (bad options, a running turn: ErrForkBusy, no live episode,
// ErrForkUnavailable).
func (s *Session) Fork(ctx context.Context, opts ForkOptions) ([]Sibling, error) {
	if err := checkForkOptions(opts); err != nil {
		return nil, err
	}
	ctx, _, end, err := s.beginOp(ctx, false)
	if errors.Is(err, ErrBusy) {
		return nil, ErrForkBusy
	}
	if err != nil {
		return nil, err
	}
	defer end()
	r, err := s.steppable()
	if err != nil {
		return nil, err
	}
	if opts.AtTurn > r.steps {
		return nil, fmt.Errorf("fork: at_turn %d is after the episode's last turn (%d)", opts.AtTurn, r.steps)
	}
	_ = ctx
	return nil, fmt.Errorf("%w: this build cannot fork yet", ErrForkUnavailable)
}
