package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/tasks"
)

// maxReplayMessageBytes and maxReplayTurns bound the turn messages (and
// the tool record marks) a run keeps for a replay fork, so that a long
// episode's memory does not grow with its turns; an episode past either
// can still fork by resume or line. Replaying 10,000 turns would take
// longer than starting the episode again.
const maxReplayMessageBytes = 16 << 20

var maxReplayTurns = 10_000 // a variable for tests (SetMaxReplayTurns)

// forkSource is what the siblings of one fork start from, taken from the
// parent between turns.
type forkSource struct {
	parentSession, parentEpisode string
	at                           int
	mechanism                    string
	// replayWhy says why an automatic fork replays: what kept it from
	// handing over the harness's state (a harness that does not answer
	// fork waits out its fork_timeout first); "" otherwise.
	replayWhy string
	task      *tasks.Task
	// snapshot holds the directories after turn at (resume and line); nil
	// for replay, which starts from a fresh episode's.
	snapshot  *episode.Snapshot
	ownSnap   bool // snapshot was taken for this fork (closed with it)
	state     *harness.ForkState
	history   *gateway.History
	tools     []bridge.ToolRecord // the bridge's answers to replay
	messages  []string            // turns 1..at, for replay
	toolMarks []int               // the record's count after each of them
	sampling  *gateway.Sampling   // the parent's sampling pin
	fullIDs   bool                // and its full_token_ids
}

// release frees what the fork took for itself.
func (src *forkSource) release() {
	if src.ownSnap && src.snapshot != nil {
		src.snapshot.Close()
	}
}

// forkSourceOf takes the parent's state for a fork of opts from run r,
// choosing the mechanism.
func (s *Session) forkSourceOf(ctx context.Context, r *run, opts ForkOptions) (*forkSource, error) {
	at := opts.AtTurn
	if at == 0 {
		at = r.steps
	}
	if err := s.forkable(r); err != nil {
		return nil, err
	}
	src := &forkSource{parentSession: s.id, parentEpisode: r.id, at: at, task: r.ep.Task(),
		history: r.ep.ModelHistory(), sampling: r.sampling, fullIDs: r.fullIDs}
	if src.history != nil {
		src.history = src.history.UpTo(at)
	}
	// The turns' messages and the bridge's record go to every sibling:
	// a replay answers from them, any other sibling keeps them for a
	// later replay fork of its own (without them it can fork only by
	// resume or line: recordsErr says why).
	recordsErr := s.takeRecords(r, src)
	var why []string
	if opts.Mechanism != ForkReplay {
		err := s.takeHarnessState(ctx, r, src)
		if err == nil && opts.Mechanism != ForkAuto && src.mechanism != opts.Mechanism {
			src.release()
			err = fmt.Errorf("the %s adapter hands over its harness's state by %s, not %s", s.cfg.Harness.Adapter, src.mechanism, opts.Mechanism)
		}
		if err == nil {
			return src, nil
		}
		if opts.Mechanism != ForkAuto {
			return nil, fmt.Errorf("%w: %v", ErrForkUnavailable, err)
		}
		why = append(why, err.Error())
	}
	if err := s.replayable(src, recordsErr); err != nil {
		why = append(why, err.Error())
		return nil, fmt.Errorf("%w: %s", ErrForkUnavailable, joinWhy(why))
	}
	src.mechanism, src.replayWhy = ForkReplay, joinWhy(why)
	return src, nil
}

// replayable says why src cannot be replayed (nil when it can).
func (s *Session) replayable(src *forkSource, recordsErr error) error {
	if recordsErr != nil {
		return recordsErr
	}
	if src.history == nil && s.cfg.Harness.Model.Enabled() {
		return errors.New("replay: the episode's model calls were not recorded")
	}
	if src.history != nil {
		if err := src.history.Replayable(); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	return nil
}

// forkable refuses episodes whose state a fork does not carry.
func (s *Session) forkable(r *run) error {
	switch {
	case s.cfg.User != nil:
		return fmt.Errorf("%w: an episode with a simulated user (user:) cannot fork: the user's conversation is not carried", ErrForkUnavailable)
	case r.ep.Task() != nil && r.ep.Task().IsMultiStep():
		return fmt.Errorf("%w: a multi-step task's episode cannot fork: its steps' grading state is not carried", ErrForkUnavailable)
	}
	return nil
}

// takeHarnessState asks the harness for its state (resume or line) and
// snapshots the directories it leaves: now for the current turn; for an
// earlier one, the checkpoint after it with the state taken then (or, for
// an agent's own resume, the current one: its session files are in the
// checkpoint's HOME).
func (s *Session) takeHarnessState(ctx context.Context, r *run, src *forkSource) error {
	f, ok := r.adapter().(harness.Forker)
	if !ok {
		return fmt.Errorf("the %s adapter cannot hand over its harness's state", s.cfg.Harness.Adapter)
	}
	if src.at < r.steps {
		return s.takeCheckpointState(ctx, r, f, src)
	}
	st, err := f.ForkState(ctx)
	if err != nil {
		return err
	}
	snap, err := r.ep.Snapshot(ctx)
	if f := heldOffFailure(ctx, r.steps, err); f != nil {
		s.heldOff(ctx, r, f)
	}
	if err != nil {
		return fmt.Errorf("snapshot the episode's directories: %w", err)
	}
	src.snapshot, src.ownSnap, src.state, src.mechanism = snap, true, st, st.Mechanism
	return nil
}

// takeCheckpointState is takeHarnessState for a turn before the current.
func (s *Session) takeCheckpointState(ctx context.Context, r *run, f harness.Forker, src *forkSource) error {
	if r.checkpoints == nil {
		return fmt.Errorf("no checkpoints: a fork at an earlier turn than the current needs episode.checkpoints: every_turn, or replay")
	}
	snap, ok := r.checkpoints.At(src.at) // a handle of its own, closed with src
	if !ok {
		return fmt.Errorf("no checkpoint after turn %d (episode.checkpoints: every_turn keeps the last %d)", src.at, s.cfg.Episode.MaxCheckpoints)
	}
	st := r.states[src.at]
	if st == nil {
		cur, err := f.ForkState(ctx)
		if err == nil && cur.Mechanism != harness.ForkResume {
			err = fmt.Errorf("the harness's %s state was not kept after turn %d", cur.Mechanism, src.at)
		}
		if err != nil {
			snap.Close()
			return err
		}
		st = cur
	}
	src.snapshot, src.ownSnap, src.state, src.mechanism = snap, true, st, st.Mechanism
	return nil
}

// takeRecords gathers what a replay needs: the turns' messages and the
// bridge's record of tool calls, up to src.at.
func (s *Session) takeRecords(r *run, src *forkSource) error {
	if r.messagesLost {
		return fmt.Errorf("replay: the episode's turn messages were not kept (past %d MiB or %d turns, or a fork made it without them)", maxReplayMessageBytes>>20, maxReplayTurns)
	}
	if src.at > len(r.messages) {
		return fmt.Errorf("replay: %d turns' messages kept, %d needed", len(r.messages), src.at)
	}
	tools, err := r.ep.ToolRecords()
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if src.at < len(r.toolMarks) {
		tools = tools[:min(len(tools), r.toolMarks[src.at])]
	}
	src.tools = tools
	src.messages = append([]string(nil), r.messages[:src.at]...)
	src.toolMarks = append([]int(nil), r.toolMarks[:min(len(r.toolMarks), src.at+1)]...)
	return nil
}

// joinWhy joins the reasons each mechanism was refused.
func joinWhy(why []string) string {
	out := ""
	for i, w := range why {
		if i > 0 {
			out += "; "
		}
		out += w
	}
	return out
}
