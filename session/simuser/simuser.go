// Package simuser owns the simulated user's protocol and its two clients:
// the JSON lines a user program reads and writes (Query, Answer) and the
// decoding of an answer; the exchange of one question and its answer with a
// started user program (AskProgram); and a model user's conversation over
// one Chat Completions call per question (Model).
//
// It must not touch an episode's run: when the user is asked, what its
// answer does to the next turn, its failures and the dialogue rubrics see
// are package session's; starting the user program (in a side sandbox) is
// package episode's. A model user's calls go from the daemon to its
// endpoint directly, never through an episode's model gateway.
package simuser

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

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/redirect"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// maxAnswerBytes bounds a model user's HTTP answer.
const maxAnswerBytes = 4 << 20

// A model user's conversation keeps the system message and the latest
// messages, at most maxHistory of them and maxHistoryBytes of text (as the
// session's dialogue for rubrics): a harness's response is bounded per
// turn only, and each call re-sends the whole conversation.
const (
	maxHistory      = 2000
	maxHistoryBytes = 8 << 20
)

// Query is one line the daemon writes to a user program.
type Query struct {
	// Type is "start" (before the first turn: write the opening message)
	// or "observation" (a turn ended: write the next message or done).
	Type      string `json:"type"`
	EpisodeID string `json:"episode_id"`
	// Turn is the turn that ended (0 for start).
	Turn int `json:"turn"`
	// Task is the episode's task, in the first query.
	Task *Task `json:"task,omitempty"`
	// Message is what the harness was told in the turn; Response its
	// answer; HarnessDone whether it said the task is complete.
	Message     string  `json:"message,omitempty"`
	Response    *string `json:"response,omitempty"`
	HarnessDone bool    `json:"harness_done,omitempty"`
}

// Task is the task as the user is told it.
type Task struct {
	ID          string         `json:"id,omitempty"`
	Instruction string         `json:"instruction"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// Answer is one line a user program writes: {"message": "..."} or
// {"done": true, "reason": "..."}. A decoded Answer has Done or a
// non-empty Message.
type Answer struct {
	Message *string `json:"message"`
	Done    bool    `json:"done"`
	Reason  string  `json:"reason"`
}

// AskProgram writes q to the user program p and reads its answer line
// (blank lines are skipped), until ctx ends.
func AskProgram(ctx context.Context, p *process.Process, q Query) (*Answer, error) {
	b, _ := wire.MarshalNoEscape(q)
	if err := p.WriteLine(ctx, b); err != nil {
		return nil, fmt.Errorf("write to the user program: %w%s", err, stderrOf(p))
	}
	for {
		// Read on this goroutine: what the program prints between
		// questions waits in its pipe, not in the daemon.
		line, err := p.ReadLine(ctx)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, io.EOF):
			st, _ := p.Wait(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("the user program %s before answering%s", st, stderrOf(p))
		case err != nil:
			return nil, fmt.Errorf("read the user program's answer: %w", err)
		case line.TooLong:
			return nil, fmt.Errorf("the user program wrote a line over %d bytes", line.Size)
		}
		if text := bytes.TrimSpace(line.Text); len(text) > 0 {
			return DecodeAnswer(text)
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

// DecodeAnswer reads one answer line.
func DecodeAnswer(text []byte) (*Answer, error) {
	var ans Answer
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

// Model is a model user's side of one episode's conversation: its prompt
// and the task as the system message, then the conversation with the roles
// swapped (its own messages are the assistant's, the harness's responses
// the user's). It is safe for concurrent use.
type Model struct {
	cfg     *config.UserModelConfig
	mu      sync.Mutex
	history []chatMessage
	bytes   int // of history's content
}

// NewModel starts an episode's conversation with the model user cfg.
func NewModel(cfg *config.UserModelConfig) *Model {
	return &Model{cfg: cfg}
}

// Ask asks the model user q: one Chat Completions call with the
// conversation so far. An answer that starts with the done marker is done,
// with the rest as its reason.
func (u *Model) Ask(ctx context.Context, q Query) (*Answer, error) {
	m := u.cfg
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
		u.add(chatMessage{Role: "system", Content: sys})
	}
	switch {
	case q.Response != nil:
		u.add(chatMessage{Role: "user", Content: *q.Response})
	default:
		u.add(chatMessage{Role: "user", Content: "(The conversation begins: write your first message.)"})
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
	u.add(chatMessage{Role: "assistant", Content: text})
	u.mu.Unlock()
	if rest, ok := strings.CutPrefix(text, m.DoneMarker); ok {
		return &Answer{Done: true, Reason: strings.TrimLeft(strings.TrimSpace(rest), ":.- ")}, nil
	}
	if text == "" {
		return nil, errors.New("the user model answered an empty message")
	}
	return &Answer{Message: &text}, nil
}

// add appends m to the conversation (u.mu held) and drops its oldest
// messages after the system message beyond maxHistory and
// maxHistoryBytes, the latest always kept. What is left after the system
// message starts with one of the harness's responses (a user message), as
// a Chat Completions conversation does.
func (u *Model) add(m chatMessage) {
	u.history = append(u.history, m)
	u.bytes += len(m.Content)
	drop := 0
	over := func() bool {
		return len(u.history)-drop > maxHistory || u.bytes > maxHistoryBytes
	}
	for 1+drop < len(u.history)-1 && (over() || u.history[1+drop].Role != "user" && drop > 0) {
		u.bytes -= len(u.history[1+drop].Content)
		drop++
	}
	if drop > 0 {
		u.history = append(u.history[:1], u.history[1+drop:]...)
	}
}

// userClient calls a model user's endpoint; it carries the model key, so
// it follows a redirect only within that endpoint's server.
var userClient = &http.Client{CheckRedirect: redirect.SameOrigin}

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
	resp, err := userClient.Do(hr)
	if err != nil {
		return "", fmt.Errorf("user model call: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
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
