package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"time"
	"unicode/utf16"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/beneath"
)

// forkSession is the session id a resume fork state carries (the claude
// and acp adapters both spell it so).
type forkSession struct {
	SessionID string `json:"session_id"`
}

// safeSessionID is the shape of a session id that may name a file.
var safeSessionID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// sessionOf returns the session id of a resume fork state.
func sessionOf(state *harness.ForkState) (string, error) {
	if state.Mechanism != harness.ForkResume {
		return "", fmt.Errorf("a %q fork state cannot be resumed", state.Mechanism)
	}
	var d forkSession
	if err := json.Unmarshal(state.Data, &d); err != nil {
		return "", fmt.Errorf("the fork state holds no session: %w", err)
	}
	if !safeSessionID.MatchString(d.SessionID) {
		return "", fmt.Errorf("the fork state's session id %q is not one an agent makes", d.SessionID)
	}
	return d.SessionID, nil
}

// sanitizePath is how Claude Code and Qwen Code make a working directory a
// directory name: every UTF-16 code unit but an ASCII letter or digit
// becomes "-".
func sanitizePath(dir string) string {
	units := utf16.Encode([]rune(dir))
	out := make([]byte, len(units))
	for i, u := range units {
		switch {
		case u >= 'a' && u <= 'z', u >= 'A' && u <= 'Z', u >= '0' && u <= '9':
			out[i] = byte(u)
		default:
			out[i] = '-'
		}
	}
	return string(out)
}

// qwenResume puts the parent's session where Qwen Code (0.15.10) looks for
// it from the sibling's working directory:
// ~/.qwen/projects/<the directory, sanitized>/chats/<session id>.jsonl.
// Qwen Code loads a session only if its records' cwd hashes to the
// project's, so when the sibling's directory differs the copy's records
// get its cwd (the conversation itself is left as it was).
func qwenResume(e *Episode, state *harness.ForkState) error {
	id, err := sessionOf(state)
	if err != nil {
		return err
	}
	projects := e.Path(".qwen", "projects")
	want := filepath.Join(projects, sanitizePath(e.Dir), "chats", id+".jsonl")
	home := e.home()
	if home.Exists(want) {
		return nil
	}
	found, _ := filepath.Glob(filepath.Join(projects, "*", "chats", id+".jsonl"))
	if len(found) == 0 {
		return fmt.Errorf("no session %s under %s: the sibling's HOME must be a copy of the parent's", id, projects)
	}
	// The copy of the parent's HOME is the parent harness's work: what is
	// read and written goes through home, which no link leads out of.
	var b []byte
	for _, f := range found {
		if b, err = home.ReadFile(f, MaxSessionFile); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	out, err := withField(b, "cwd", e.Dir)
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	return home.WriteFile(want, out)
}

// MaxSessionFile bounds the bytes of an agent's session file the daemon
// reads to resume or fork it; a longer one cannot be forked by the agent's
// own resume.
const MaxSessionFile = 256 << 20

// withField returns the JSONL records of b with every string field name
// set to value. A record without the field keeps its bytes; one with it is
// written again with its keys sorted, every other value as it was.
func withField(b []byte, name, value string) ([]byte, error) {
	v, _ := json.Marshal(value)
	var out bytes.Buffer
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("record %d is not a JSON object: %w", i+1, err)
		}
		if old, ok := rec[name]; ok && len(old) > 0 && old[0] == '"' {
			rec[name] = v
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // keeps "<" as the agent wrote it
			if err := enc.Encode(rec); err != nil {
				return nil, fmt.Errorf("record %d: %w", i+1, err)
			}
			line = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// SettleTimeout bounds how long a fork waits for an agent to write its
// session file down (Preset.ForkSettle).
const SettleTimeout = 10 * time.Second

// qwenSettle waits until Qwen Code's session file holds the last turn: a
// record carrying its message, followed by an assistant record. Qwen Code
// (0.15.10) writes a turn's records a while after answering it.
func qwenSettle(ctx context.Context, e *Episode, state *harness.ForkState, last string) error {
	id, err := sessionOf(state)
	if err != nil {
		return err
	}
	file := e.Path(".qwen", "projects", sanitizePath(e.Dir), "chats", id+".jsonl")
	return waitFile(ctx, e.home(), file, turnWritten(last, `"type":"assistant"`))
}

// turnWritten reports a session file that holds the turn of message last
// (JSON-encoded as JavaScript writes it) followed by a record with answer
// (e.g. `"type":"assistant"`). Without a turn yet any file will do.
func turnWritten(last, answer string) func([]byte) bool {
	var msg bytes.Buffer
	enc := json.NewEncoder(&msg)
	enc.SetEscapeHTML(false) // as JSON.stringify writes it
	enc.Encode(last)
	needle := bytes.TrimSuffix(msg.Bytes(), []byte("\n"))
	return func(b []byte) bool {
		if last == "" {
			return true
		}
		i := bytes.LastIndex(b, needle)
		return i >= 0 && bytes.Contains(b[i:], []byte(answer))
	}
}

// waitFile polls file beneath dir until done holds for its content, for
// up to SettleTimeout; then the fork cannot use the agent's resume (the
// error wraps harness.ErrForkUnsupported). The file is read as dir allows
// (beneath.Dir: a link out of it, a FIFO or a file over MaxSessionFile is
// never done).
func waitFile(ctx context.Context, dir beneath.Dir, file string, done func([]byte) bool) error {
	deadline := time.NewTimer(SettleTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := dir.ReadFile(file, MaxSessionFile); err == nil && done(b) {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("the agent's session file %s does not hold its last turn after %s: %w", file, SettleTimeout, harness.ErrForkUnsupported)
		case <-ctx.Done():
			return fmt.Errorf("wait for the agent's session file: %w", ctx.Err())
		}
	}
}
