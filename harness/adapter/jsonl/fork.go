package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/clip"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// maxPendingLines bounds the lines a harness may write between turns while
// it is asked to fork or restore; they are handled in the next turn. Their
// bytes are bounded too: by the output limit (adapterkit.OutputLimit).
const maxPendingLines = 1024

// answer is a line read while waiting for a fork or restore answer.
type answer struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	State json.RawMessage `json:"state"`
	Data  struct {
		Message string `json:"message"`
	} `json:"data"`
}

// readAnswer decodes text when it is a line of one of types, or an error
// event (a refusal); ok is false for any other line.
func readAnswer(text []byte, types ...string) (answer, bool) {
	trimmed := bytes.TrimSpace(text)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return answer{}, false
	}
	var a answer
	if json.Unmarshal(trimmed, &a) != nil {
		return answer{}, false
	}
	if a.Type == string(wire.EventError) {
		return a, true
	}
	for _, t := range types {
		if a.Type == t {
			return a, true
		}
	}
	return answer{}, false
}

// refusal says what an error event answering a request said.
func refusal(a answer) string {
	if a.Data.Message == "" {
		return "an error event without a message"
	}
	return strconv.Quote(clip.Bytes([]byte(a.Data.Message)))
}

// ForkState implements harness.Forker: between turns it sends
// {"type":"fork","id":ID} and waits, up to harness.options.fork_timeout
// (DefaultForkTimeout) or until ctx ends, for {"type":"fork_state",
// "state":STATE} (the id echoed or left out). The state becomes the
// ForkState's Data, with mechanism harness.ForkLine. A harness that
// answers an error event, says nothing in time, writes a state line longer
// than max_line_bytes or a fork_state without a state cannot fork: the
// error wraps harness.ErrForkUnsupported with the reason, and the harness
// goes on as before (a late fork_state line is dropped when it comes;
// other lines it wrote meanwhile belong to the next turn).
func (a *Adapter) ForkState(ctx context.Context) (*harness.ForkState, error) {
	p := a.Process()
	if p == nil || !p.Alive() {
		return nil, harness.Fail(wire.FailureHarnessExited, "harness is not running")
	}
	a.mu.Lock()
	if a.turn != 0 {
		a.mu.Unlock()
		return nil, errors.New("jsonl: fork state asked for during a turn")
	}
	a.forkSeq++
	id := "fork-" + strconv.Itoa(a.forkSeq)
	timeout := a.opts.ForkTimeout
	a.mu.Unlock()
	if timeout <= 0 {
		timeout = DefaultForkTimeout
	}
	msg, _ := json.Marshal(map[string]any{"type": "fork", "id": id})
	if err := p.WriteLine(ctx, msg); err != nil {
		return nil, fmt.Errorf("jsonl: send fork: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		line, err := p.ReadLine(rctx)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			a.expectLate()
			return nil, fmt.Errorf("jsonl: waiting for the fork state: %w", ctx.Err())
		case rctx.Err() != nil:
			a.expectLate()
			return nil, fmt.Errorf("the harness did not answer fork within %s (harness.options.fork_timeout): %w", timeout, harness.ErrForkUnsupported)
		case errors.Is(err, io.EOF):
			return nil, harness.Fail(wire.FailureHarnessExited, "harness closed its output while asked to fork")
		default:
			return nil, fmt.Errorf("jsonl: waiting for the fork state: %w", err)
		}
		if line.TooLong {
			return nil, fmt.Errorf("the harness wrote a %d-byte line while asked to fork (max_line_bytes %d): a fork state must fit in one line: %w",
				line.Size, a.MaxLineBytes(), harness.ErrForkUnsupported)
		}
		ans, isAnswer := readAnswer(line.Text, "fork_state")
		if !isAnswer {
			if err := a.keepPending(line.Text); err != nil {
				return nil, err
			}
			continue
		}
		if ans.Type == string(wire.EventError) {
			return nil, fmt.Errorf("the harness answered fork with %s: %w", refusal(ans), harness.ErrForkUnsupported)
		}
		if a.staleAnswer(ans.ID, id) {
			continue
		}
		if len(ans.State) == 0 {
			return nil, fmt.Errorf("the harness answered fork without a state: %w", harness.ErrForkUnsupported)
		}
		return &harness.ForkState{Mechanism: harness.ForkLine, Data: append(json.RawMessage(nil), ans.State...)}, nil
	}
}

// expectLate notes that an answer to a fork request may still come.
func (a *Adapter) expectLate() {
	a.mu.Lock()
	a.stale++
	a.mu.Unlock()
}

// staleAnswer reports whether a fork_state answer with id got is the late
// answer of an earlier request rather than of want's (and forgets it).
// Answers come in the order of the requests; one without an id is an
// earlier request's while any is due.
func (a *Adapter) staleAnswer(got, want string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if got == want || (got == "" && a.stale == 0) {
		return false
	}
	if a.stale > 0 {
		a.stale--
	}
	a.logger.Debug("dropped the late answer of an earlier fork request", "id", clip.String(got))
	return true
}

// dropLate reports whether a fork_state line read during a turn is the late
// answer of a timed-out fork request, to be dropped.
func (a *Adapter) dropLate() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stale == 0 {
		return false
	}
	a.stale--
	return true
}

// keepPending keeps a line the harness wrote between turns for the next
// turn.
func (a *Adapter) keepPending(text []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pending) >= maxPendingLines {
		return harness.Fail(wire.FailureProtocol, "harness wrote more than %d lines between turns without answering", maxPendingLines)
	}
	if limit := a.OutputLimit(); a.pendingN+int64(len(text)) > limit {
		return harness.Fail(wire.FailureOutputLimit, "harness wrote more than %d bytes between turns without answering (%s)",
			limit, adapterkit.OutputKnob)
	}
	a.pendingN += int64(len(text))
	a.pending = append(a.pending, append([]byte(nil), text...))
	return nil
}

// restore sends the parent's state to the freshly started harness p and
// waits for {"type":"restored"}. An error event is a refusal; lines of any
// other kind are kept for the first turn.
func (a *Adapter) restore(ctx context.Context, p *process.Process, fs *harness.ForkState, maxLine int) ([][]byte, error) {
	line, err := json.Marshal(map[string]any{"type": "restore", "state": fs.Data})
	if err != nil {
		return nil, harness.Wrap(wire.FailureStartupFailed, err, "the fork state is not JSON")
	}
	if len(line) > maxLine {
		return nil, harness.Fail(wire.FailureStartupFailed,
			"the restore line would be %d bytes, over max_line_bytes %d", len(line), maxLine)
	}
	if err := p.WriteLine(ctx, line); err != nil {
		return nil, fmt.Errorf("send restore: %w", err)
	}
	var pending [][]byte
	for {
		l, err := p.ReadLine(ctx)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil, harness.Fail(wire.FailureStartupFailed, "harness did not answer restore before the startup timeout")
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("harness closed its output before answering restore: %w", adapterkit.ErrHungUp)
		default:
			return nil, fmt.Errorf("read the answer to restore: %w", err)
		}
		if l.TooLong {
			return nil, harness.Fail(wire.FailureStartupFailed, "harness wrote a %d-byte line while restoring (limit %d)", l.Size, maxLine)
		}
		if err := p.CheckStartupOutput(); err != nil {
			return nil, err // still start-up: all it wrote since it started counts
		}
		ans, isAnswer := readAnswer(l.Text, "restored")
		switch {
		case !isAnswer:
			if len(pending) >= maxPendingLines {
				return nil, harness.Fail(wire.FailureStartupFailed, "harness wrote more than %d lines without answering restore", maxPendingLines)
			}
			pending = append(pending, append([]byte(nil), l.Text...))
		case ans.Type == string(wire.EventError):
			return nil, harness.Fail(wire.FailureStartupFailed, "harness refused the fork state: %s", refusal(ans))
		default:
			return pending, nil
		}
	}
}

var _ harness.Forker = (*Adapter)(nil)
