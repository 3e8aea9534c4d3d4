package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/harness"

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
	t0 := time.Now()
	r, src, err := s.takeForkSource(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer src.release()
	sibs := make([]Sibling, opts.Count)
	var wg sync.WaitGroup
	for i := range sibs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sibs[i] = s.openSibling(ctx, src, opts)
		}()
	}
	wg.Wait()
	failed := 0
	for _, sb := range sibs {
		if sb.Err != nil {
			failed++
		}
	}
	log := r.ep.Log()
	if src.replayWhy != "" {
		log = log.With("replay_because", src.replayWhy)
	}
	log.Info("episode forked", "siblings", opts.Count, "failed", failed, "at_turn", src.at,
		"mechanism", src.mechanism, "elapsed", time.Since(t0))
	s.notify(Forked{SessionID: s.id, EpisodeID: r.id, AtTurn: src.at, Mechanism: src.mechanism,
		Siblings: sibs, Elapsed: time.Since(t0)})
	return sibs, nil
}

// takeForkSource takes what the siblings of opts start from, within an
// operation of the parent's: between turns, and only as long as that takes
// (the siblings then open without holding the parent, which may step on).
func (s *Session) takeForkSource(ctx context.Context, opts ForkOptions) (*run, *forkSource, error) {
	ctx, _, end, err := s.beginOp(ctx, false)
	if errors.Is(err, ErrBusy) {
		return nil, nil, ErrForkBusy
	}
	if err != nil {
		return nil, nil, err
	}
	defer end()
	r, err := s.steppable()
	if err != nil {
		return nil, nil, err
	}
	if opts.AtTurn > r.steps {
		return nil, nil, fmt.Errorf("fork: at_turn %d is after the episode's last turn (%d)", opts.AtTurn, r.steps)
	}
	src, err := s.forkSourceOf(ctx, r, opts)
	return r, src, err
}

// divergences collects what the doors of a replaying sibling report.
type divergences struct {
	mu  sync.Mutex
	err error
}

func newDivergences() *divergences { return &divergences{} }

// add keeps the first divergence.
func (d *divergences) add(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = err
	}
}

// first returns the first divergence, nil without.
func (d *divergences) first() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// noteTurnForFork keeps what a later fork of r needs after turn n, whose
// message the harness got as msg: the message (for replay), the bridge's
// record count, and a checkpoint of the directories when configured. It
// returns the failure that ends the episode when the harness held the
// checkpoint off (see checkpoint).
func (s *Session) noteTurnForFork(ctx context.Context, r *run, n int, msg string) *harness.Failure {
	s.mu.Lock()
	if !r.messagesLost && len(r.messages) == n-1 {
		if r.messageBytes+len(msg) > maxReplayMessageBytes || n > maxReplayTurns {
			// Only a replay uses them: what it cannot use is let go.
			r.messagesLost, r.messages, r.toolMarks = true, nil, nil
		} else {
			r.messages = append(r.messages, msg)
			r.messageBytes += len(msg)
		}
	}
	if !r.messagesLost {
		if len(r.toolMarks) == 0 {
			r.toolMarks = append(r.toolMarks, 0)
		}
		r.toolMarks = append(r.toolMarks, r.ep.ToolRecordCount())
	}
	s.mu.Unlock()
	return s.checkpoint(ctx, r, n)
}

// checkpoint snapshots r's directories after turn n when
// episode.checkpoints is every_turn, with the harness's state when its
// adapter hands one over (a line-protocol harness's state at turn n). A
// failed snapshot is logged: the episode goes on, a fork from that turn
// needs replay. But a harness that held the snapshot's freeze off
// (episode.ErrWriteHeldOpen) ends the episode: until its write ends every
// write to the disk blocks, the daemon's included (an event's file before
// the next turn hung the step for good); the failure returned is the
// step's, and stopping the harness ends the write.
func (s *Session) checkpoint(ctx context.Context, r *run, n int) *harness.Failure {
	if s.cfg.Episode.Checkpoints != config.CheckpointsEveryTurn {
		return nil
	}
	if r.checkpoints == nil {
		r.checkpoints = episode.NewCheckpoints(s.cfg.Episode.MaxCheckpoints, int64(s.cfg.Episode.MaxCheckpointBytes))
		r.states = map[int]*harness.ForkState{}
	}
	var st *harness.ForkState
	if f, ok := r.adapter().(harness.Forker); ok {
		st, _ = f.ForkState(ctx) // without one, a fork from turn n replays
	}
	snap, err := r.ep.Snapshot(ctx)
	if f := heldOffFailure(ctx, n, err); f != nil {
		return f
	}
	if err != nil {
		r.ep.Log().Warn("no checkpoint after this turn: a fork from it needs replay", "turn", n, "err", err)
		return nil
	}
	r.checkpoints.Add(n, snap)
	s.mu.Lock()
	defer s.mu.Unlock()
	r.states[n] = st
	held := map[int]bool{}
	for _, k := range r.checkpoints.Turns() {
		held[k] = true
	}
	for k := range r.states {
		if !held[k] {
			delete(r.states, k) // its checkpoint was dropped
		}
	}
	return nil
}

// heldOff stops r's harness, whose write held a fork's snapshot off (so
// that the write ends and the disk thaws), and leaves f for its next step.
func (s *Session) heldOff(ctx context.Context, r *run, f *harness.Failure) {
	tctx, cancel := teardown(ctx)
	defer cancel()
	r.ep.StopHarness(tctx)
	s.mu.Lock()
	r.heldOff = f
	s.mu.Unlock()
	r.ep.Log().Warn("harness stopped: it held a write to its disk open through a fork's snapshot", "error", f.Message)
}

// heldOffFailure is the failure that ends an episode whose snapshot after
// turn n failed with err because the harness held a write to its disk
// open (nil for any other outcome, and when ctx ended first).
func heldOffFailure(ctx context.Context, n int, err error) *harness.Failure {
	if !errors.Is(err, episode.ErrWriteHeldOpen) || ctx.Err() != nil {
		return nil
	}
	return harness.Wrap(wire.FailureProtocol, err, "the harness held a write to its disk open through the snapshot after turn %d "+
		"(limits.disk with episode.checkpoints or a fork): until that write ends every write to the disk blocks, so the "+
		"harness is stopped", n)
}

// dropCheckpoints frees r's checkpoints once its episode has ended.
func dropCheckpoints(r *run) {
	if r.checkpoints != nil {
		r.checkpoints.Close()
	}
}
