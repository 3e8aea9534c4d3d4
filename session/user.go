package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/session/simuser"
	"github.com/harnessd/harnessd/wire"
)

// The simulated user (user: in the configuration) writes the turns a
// trainer leaves empty. Its semantics:
//
//   - A step whose message is empty takes the user's message: the one the
//     user wrote after the previous turn, or, before the first turn, the
//     one it writes when asked to open (with a task, the task's instruction
//     opens instead and the user is told the task).
//   - After every turn that completed without ending the episode the user
//     is shown the turn's observation (its response, whether the harness
//     said done) and answers the next message or done. Done ends the
//     episode with that turn: its observation has done, metadata.user_done
//     and user_reason, and the done rubrics score it with the dialogue.
//   - A step with a message of its own (the trainer's) uses it; the user's
//     pending message is dropped.
//   - A user that fails (its program dies, times out or writes what is not
//     an answer; its model call fails) ends the episode at the next step
//     with error_type user_failed.
//   - A step with {"metadata": {"play": true}} plays turns until the episode
//     is done (PlayKey).
//
// The user's messages are recorded as message records with source "user";
// the model user's calls go from the daemon to its endpoint directly, never
// through the episode's model gateway, so they are never captured and never
// in the training export.

// PlayKey is the action metadata key that plays the episode to its end in
// one step: {"message": "", "metadata": {"play": true}} runs turn after
// turn, each with the simulated user's message (the first with the step's
// message if it has one), until the episode is done: the user says done,
// the harness says done (episode.end_on_done), max_turns, a failure, or the
// episode's budget. It returns the last turn's observation; every turn's
// events stream as they happen.
const PlayKey = "play"

// maxDialogue bounds the dialogue a session keeps for rubrics: the latest
// entries, at most this many, and at most maxDialogueBytes of text.
const (
	maxDialogue      = 2000
	maxDialogueBytes = 8 << 20
)

// userState is an episode's simulated user: its program (started at the
// first question), the message it wrote for the next turn, a failure to
// report at the next step, and the dialogue.
type userState struct {
	mu       sync.Mutex
	cfg      *config.UserConfig
	proc     *process.Process
	pending  *string
	failure  *harness.Failure
	told     bool // the task has been sent
	dialogue []rubric.DialogueEntry
	bytes    int
	model    *simuser.Model // a model user's conversation (user.model)
}

// newUserState is a fresh episode's user (nil without user:).
func newUserState(cfg *config.Config) *userState {
	if cfg.User == nil {
		return nil
	}
	u := &userState{cfg: cfg.User}
	if cfg.User.Model != nil {
		u.model = simuser.NewModel(cfg.User.Model)
	}
	return u
}

// note adds an entry to the dialogue, dropping the oldest beyond the bounds.
func (u *userState) note(turn int, role, source, content string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.dialogue = append(u.dialogue, rubric.DialogueEntry{Turn: turn, Role: role, Source: source, Content: content})
	u.bytes += len(content)
	for len(u.dialogue) > 1 && (len(u.dialogue) > maxDialogue || u.bytes > maxDialogueBytes) {
		u.bytes -= len(u.dialogue[0].Content)
		u.dialogue = u.dialogue[1:]
	}
}

// Dialogue returns a copy of the dialogue so far.
func (u *userState) Dialogue() []rubric.DialogueEntry {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]rubric.DialogueEntry(nil), u.dialogue...)
}

// userMessage decides turn n's message: the step's own, or (empty, with a
// user) the user's. A non-nil failure ends the episode before the turn
// (user_failed); done says the user ended it before the first turn.
func (s *Session) userMessage(ctx context.Context, r *run, n int, a wire.Action) (wire.Action, string, *harness.Failure, *simuser.Answer) {
	u := r.user
	task := r.ep.Task()
	if a.Message != "" || u == nil {
		src := ""
		if a.Message == "" && n == 1 && task != nil {
			src = wire.SourceTask
		}
		if u != nil {
			u.mu.Lock()
			u.pending = nil
			u.mu.Unlock()
			u.note(n, "user", orTrainer(src), s.turnMessage(r, n, a.Message))
		}
		return a, src, nil, nil
	}
	u.mu.Lock()
	f, pending := u.failure, u.pending
	u.pending = nil
	u.mu.Unlock()
	if f != nil {
		return a, "", f, nil
	}
	if pending != nil {
		a.Message = *pending
		u.note(n, "user", wire.SourceUser, a.Message)
		return a, wire.SourceUser, nil, nil
	}
	if n == 1 && task != nil {
		// The task's instruction opens the conversation.
		u.note(n, "user", wire.SourceTask, task.Instruction)
		return a, wire.SourceTask, nil, nil
	}
	ans, err := s.askUser(ctx, r, simuser.Query{Type: "start", EpisodeID: r.id, Turn: n - 1})
	if err != nil {
		return a, "", harness.Wrap(wire.FailureUser, err, "simulated user"), nil
	}
	if ans.Done {
		return a, "", nil, ans
	}
	a.Message = *ans.Message
	u.note(n, "user", wire.SourceUser, a.Message)
	return a, wire.SourceUser, nil, nil
}

func orTrainer(src string) string {
	if src == "" {
		return "trainer"
	}
	return src
}

// afterTurn shows the user the completed turn n (which did not end the
// episode by itself) and keeps its next message. It returns the user's
// done, nil otherwise; a failure is kept for the next step.
func (s *Session) afterTurn(ctx context.Context, r *run, n int, msg string, res harness.TurnResult) *simuser.Answer {
	u := r.user
	if u == nil {
		return nil
	}
	u.note(n, "assistant", "", res.Response)
	resp := res.Response
	ans, err := s.askUser(ctx, r, simuser.Query{Type: "observation", EpisodeID: r.id, Turn: n, Message: msg, Response: &resp, HarnessDone: res.Done})
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case err != nil:
		u.failure = harness.Wrap(wire.FailureUser, err, "simulated user")
	case ans.Done:
		return ans
	default:
		u.pending = ans.Message
	}
	return nil
}

// askUser asks the user one question within user.timeout.
func (s *Session) askUser(ctx context.Context, r *run, q simuser.Query) (*simuser.Answer, error) {
	u := r.user
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout.D())
	defer cancel()
	u.mu.Lock()
	if !u.told {
		u.told = true
		if t := r.ep.Task(); t != nil {
			q.Task = &simuser.Task{ID: t.ID, Instruction: t.Instruction, Metadata: t.Metadata}
		}
	}
	u.mu.Unlock()
	var ans *simuser.Answer
	var err error
	if u.model != nil {
		ans, err = u.model.Ask(ctx, q)
	} else {
		ans, err = s.askProgram(ctx, r, q)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within user.timeout %s: %w", u.cfg.Timeout, err)
		}
		r.ep.Log().Warn("the simulated user failed", "turn", q.Turn, "err", err)
		return nil, err
	}
	if ans.Done {
		r.ep.Log().Debug("the simulated user ended the episode", "turn", q.Turn, "reason", ans.Reason)
	}
	return ans, nil
}

// askProgram asks the user program q, starting it at the first question.
func (s *Session) askProgram(ctx context.Context, r *run, q simuser.Query) (*simuser.Answer, error) {
	u := r.user
	u.mu.Lock()
	p := u.proc
	u.mu.Unlock()
	if p == nil {
		var err error
		if p, err = r.ep.StartUser(ctx, u.cfg); err != nil {
			return nil, err
		}
		u.mu.Lock()
		u.proc = p
		u.mu.Unlock()
	}
	return simuser.AskProgram(ctx, p, q)
}

// userEnded ends the episode because the user said done before the
// first turn: no turn runs.
func (s *Session) userEnded(ctx context.Context, r *run, n int, ans *simuser.Answer) *wire.Observation {
	s.events.EndTurn()
	s.finish(ctx, r, "")
	empty := ""
	obs := &wire.Observation{Done: true, Metadata: wire.Metadata{
		EpisodeID: r.id, TurnNumber: n - 1, Response: &empty, UserDone: true, UserReason: ans.Reason,
	}}
	s.noteObservation(obs)
	return obs
}

// playRequested reports a step asking to play the episode to its end.
func playRequested(a wire.Action) bool {
	v, ok := a.Metadata[PlayKey].(bool)
	return ok && v
}

// play runs steps until the episode is done (PlayKey): the first with a's
// message, the rest with the user's.
func (s *Session) play(ctx context.Context, a wire.Action, emit func(wire.Event)) (*wire.Observation, error) {
	md := make(map[string]any, len(a.Metadata))
	for k, v := range a.Metadata {
		if k != PlayKey {
			md[k] = v
		}
	}
	a.Metadata = md
	started := time.Now()
	for {
		obs, err := s.Step(ctx, a, emit)
		if err != nil || obs.Done {
			if err == nil {
				s.log.Debug("played the episode to its end", "turns", obs.Metadata.TurnNumber, "elapsed", time.Since(started))
			}
			return obs, err
		}
		if err := ctx.Err(); err != nil {
			return obs, err
		}
		a = wire.Action{Metadata: md, Timeout: a.Timeout}
	}
}
