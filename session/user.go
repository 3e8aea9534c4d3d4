package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/rubric"
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

// maxUserAnswerBytes bounds a model user's HTTP answer.
const maxUserAnswerBytes = 4 << 20

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
	history  []chatMessage // a model user's conversation, its roles swapped
}

// userQuery is one line the daemon writes to a user program.
type userQuery struct {
	// Type is "start" (before the first turn: write the opening message)
	// or "observation" (a turn ended: write the next message or done).
	Type      string `json:"type"`
	EpisodeID string `json:"episode_id"`
	// Turn is the turn that ended (0 for start).
	Turn int `json:"turn"`
	// Task is the episode's task, in the first query.
	Task *userTask `json:"task,omitempty"`
	// Message is what the harness was told in the turn; Response its
	// answer; HarnessDone whether it said the task is complete.
	Message     string  `json:"message,omitempty"`
	Response    *string `json:"response,omitempty"`
	HarnessDone bool    `json:"harness_done,omitempty"`
}

// userTask is the task as the user is told it.
type userTask struct {
	ID          string         `json:"id,omitempty"`
	Instruction string         `json:"instruction"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// userAnswer is one line a user program writes: {"message": "..."} or
// {"done": true, "reason": "..."}.
type userAnswer struct {
	Message *string `json:"message"`
	Done    bool    `json:"done"`
	Reason  string  `json:"reason"`
}

// newUserState is a fresh episode's user (nil without user:).
func newUserState(cfg *config.Config) *userState {
	if cfg.User == nil {
		return nil
	}
	return &userState{cfg: cfg.User}
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
func (s *Session) userMessage(ctx context.Context, r *run, n int, a wire.Action) (wire.Action, string, *harness.Failure, *userAnswer) {
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
	ans, err := s.askUser(ctx, r, userQuery{Type: "start", EpisodeID: r.id, Turn: n - 1})
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
func (s *Session) afterTurn(ctx context.Context, r *run, n int, msg string, res harness.TurnResult) *userAnswer {
	u := r.user
	if u == nil {
		return nil
	}
	u.note(n, "assistant", "", res.Response)
	resp := res.Response
	ans, err := s.askUser(ctx, r, userQuery{Type: "observation", EpisodeID: r.id, Turn: n, Message: msg, Response: &resp, HarnessDone: res.Done})
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
func (s *Session) askUser(ctx context.Context, r *run, q userQuery) (*userAnswer, error) {
	u := r.user
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout.D())
	defer cancel()
	u.mu.Lock()
	if !u.told {
		u.told = true
		if t := r.ep.Task(); t != nil {
			q.Task = &userTask{ID: t.ID, Instruction: t.Instruction, Metadata: t.Metadata}
		}
	}
	u.mu.Unlock()
	var ans *userAnswer
	var err error
	if u.cfg.Model != nil {
		ans, err = s.askModel(ctx, r, q)
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

// askProgram writes q to the user program (starting it at the first
// question) and reads its answer line.
func (s *Session) askProgram(ctx context.Context, r *run, q userQuery) (*userAnswer, error) {
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
	b, _ := wire.MarshalNoEscape(q)
	if err := p.WriteLine(ctx, b); err != nil {
		return nil, fmt.Errorf("write to the user program: %w%s", err, stderrOf(p))
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case line, ok := <-p.Lines():
			if !ok {
				st, _ := p.Wait(context.WithoutCancel(ctx))
				return nil, fmt.Errorf("the user program %s before answering%s", st, stderrOf(p))
			}
			if line.TooLong {
				return nil, fmt.Errorf("the user program wrote a line over %d bytes", line.Size)
			}
			text := bytes.TrimSpace(line.Text)
			if len(text) == 0 {
				continue
			}
			return decodeAnswer(text)
		}
	}
}

// stderrOf is the user program's stderr tail for an error message.
func stderrOf(p *process.Process) string {
	if t := strings.TrimSpace(p.StderrTail()); t != "" {
		return "; stderr: " + t
	}
	return ""
}

// decodeAnswer reads one answer line.
func decodeAnswer(text []byte) (*userAnswer, error) {
	var ans userAnswer
	dec := json.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(&ans); err != nil {
		return nil, fmt.Errorf(`the user program wrote %q, not {"message": "..."} or {"done": true}: %w`, clip(string(text)), err)
	}
	if !ans.Done && (ans.Message == nil || *ans.Message == "") {
		return nil, fmt.Errorf(`the user program answered %q: neither a non-empty "message" nor "done": true`, clip(string(text)))
	}
	return &ans, nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// chatMessage is one OpenAI Chat Completions message.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// askModel asks the model user: its prompt and the task as the system
// message, then the conversation with the roles swapped (its own messages
// are the assistant's, the harness's responses the user's).
func (s *Session) askModel(ctx context.Context, r *run, q userQuery) (*userAnswer, error) {
	u := r.user
	m := u.cfg.Model
	u.mu.Lock()
	if len(u.history) == 0 {
		sys := m.Prompt
		if q.Task != nil {
			sys = strings.TrimSpace(sys + "\n\nThe task you want done: " + q.Task.Instruction)
		}
		if sys == "" {
			sys = "You are a user talking to an AI assistant."
		}
		sys += fmt.Sprintf("\n\nWrite only your next message to the assistant. When you are satisfied (or want to stop), answer %s followed by your reason.", m.DoneMarker)
		u.history = append(u.history, chatMessage{Role: "system", Content: sys})
	}
	switch {
	case q.Response != nil:
		u.history = append(u.history, chatMessage{Role: "user", Content: *q.Response})
	default:
		u.history = append(u.history, chatMessage{Role: "user", Content: "(The conversation begins: write your first message.)"})
	}
	req := map[string]any{"messages": append([]chatMessage(nil), u.history...), "stream": false}
	u.mu.Unlock()
	if m.Name != "" {
		req["model"] = m.Name
	}
	if m.MaxTokens > 0 {
		req["max_tokens"] = m.MaxTokens
	}
	text, err := chatCompletion(ctx, m, req)
	if err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	u.mu.Lock()
	u.history = append(u.history, chatMessage{Role: "assistant", Content: text})
	u.mu.Unlock()
	if rest, ok := strings.CutPrefix(text, m.DoneMarker); ok {
		return &userAnswer{Done: true, Reason: strings.TrimLeft(strings.TrimSpace(rest), ":.- ")}, nil
	}
	if text == "" {
		return nil, errors.New("the user model answered an empty message")
	}
	return &userAnswer{Message: &text}, nil
}

// chatCompletion makes one non-streaming Chat Completions call to the model
// user's endpoint and returns the first choice's text.
func chatCompletion(ctx context.Context, m *config.UserModelConfig, req map[string]any) (string, error) {
	body, _ := json.Marshal(req)
	url := m.Endpoint().OpenAIBase() + "/chat/completions"
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("user model request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if m.APIKeyEnv != "" {
		if key := os.Getenv(m.APIKeyEnv); key != "" {
			hr.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return "", fmt.Errorf("user model call: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxUserAnswerBytes))
	if err != nil {
		return "", fmt.Errorf("user model answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("user model call: %s: %s", resp.Status, clip(string(b)))
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
		return "", fmt.Errorf("user model answer is not a chat completion: %s", clip(string(b)))
	}
	return out.Choices[0].Message.Content, nil
}

// userEnded ends the episode because the user said done before the
// first turn: no turn runs.
func (s *Session) userEnded(ctx context.Context, r *run, n int, ans *userAnswer) *wire.Observation {
	s.events.endTurn()
	s.finish(ctx, r, "")
	empty := ""
	obs := &wire.Observation{Done: true, Metadata: wire.Metadata{
		EpisodeID: r.id, TurnNumber: n - 1, Response: &empty, UserDone: true, UserReason: ans.Reason,
	}}
	s.events.note(observationRecord(obs))
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
