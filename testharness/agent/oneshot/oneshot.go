// Package oneshot is the fake agent's one-turn-per-process front end
// ("--protocol oneshot"), for harness/adapter/oneshot: like "codex exec",
// "gemini -p" or "opencode run", the message is the positional arguments,
// the conversation is saved per session id in a directory, --resume ID
// continues it, and the output is printed in one of several formats (see
// formats). SIGINT interrupts the turn: it ends as cancelled and the
// process exits 130. The turn runs through testharness/agent's directive
// executor.
//
// It owns the sessions on disk and the output formats only; the directives
// are the executor's. Like the rest of the fake agent it must not import
// harnessd's own packages: it plays a foreign program.
package oneshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/harnessd/harnessd/testharness/agent"
	"github.com/harnessd/harnessd/testharness/agent/frontend"
)

// Options are the oneshot front end's settings: the common start-up
// behaviours and its own.
type Options struct {
	frontend.Options
	// Args are the positional arguments after the flags: the message.
	Args []string
	// SessionDir is where conversation histories are kept, one file per
	// session id (empty: $HOME/.testharness/sessions).
	SessionDir string
	// Resume is the session id to continue (empty: a new session).
	Resume string
	// Format is the output format (empty: jsonl).
	Format string
}

// formats are the output formats of the oneshot front end.
var formats = map[string]func(w *frontend.LineWriter, stderr io.Writer) oneShotSink{
	"jsonl":    newJSONLShot,
	"text":     newTextShot,
	"codex":    newCodexShot,
	"gemini":   newGeminiShot,
	"opencode": newOpenCodeShot,
}

// oneShotSink is a Sink that also frames the turn.
type oneShotSink interface {
	agent.Sink
	begin(sessionID, msg string)
	end(out agent.Outcome, msg string)
}

// session is a saved conversation.
type session struct {
	ID      string   `json:"session_id"`
	History []string `json:"history"`
}

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func sessionPath(dir, id string) (string, error) {
	if !sessionIDPattern.MatchString(id) || strings.Contains(id, "..") {
		return "", fmt.Errorf("bad session id %q", id)
	}
	return filepath.Join(dir, id+".json"), nil
}

func loadSession(dir, id string) (*session, error) {
	path, err := sessionPath(dir, id)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no session %q in %s", id, dir)
	}
	if err != nil {
		return nil, err
	}
	var s session
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("session %q: %w", id, err)
	}
	s.ID = id
	return &s, nil
}

func (s *session) save(dir string) error {
	path, err := sessionPath(dir, s.ID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, _ := json.Marshal(s)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func newSessionID() string {
	var b [8]byte
	rand.Read(b[:])
	return "ses-" + hex.EncodeToString(b[:])
}

// argvJSON says the raw positional arguments as a JSON array.
func argvJSON(args []string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(args)
	return "argv: " + strings.TrimSuffix(buf.String(), "\n")
}

// Run runs one turn with the positional arguments as the message and
// returns the process exit code.
func Run(opts Options, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
	if code, exit := frontend.Start(opts.Options, stderr); exit {
		return code
	}
	format := opts.Format
	if format == "" {
		format = "jsonl"
	}
	mk, ok := formats[format]
	if !ok {
		fmt.Fprintf(stderr, "testharness oneshot: unknown format %q\n", format)
		return 2
	}
	if len(opts.Args) == 0 {
		fmt.Fprintln(stderr, "testharness oneshot: no message")
		return 2
	}
	dir := opts.SessionDir
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		dir = filepath.Join(home, ".testharness", "sessions")
	}
	sess := &session{ID: newSessionID()}
	if opts.Resume != "" {
		s, err := loadSession(dir, opts.Resume)
		if err != nil {
			fmt.Fprintln(stderr, "testharness oneshot:", err)
			return 1
		}
		sess = s
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	exe := &agent.Executor{Directives: map[string]agent.DirectiveFunc{
		"argv": agent.SayFunc(func(string) string { return argvJSON(opts.Args) }),
	}}
	exe.Resume(sess.History)
	if tools := frontend.EnvTools(opts.Options); tools != nil {
		defer tools.Close()
		exe.Tools = tools
	}
	out := frontend.NewLineWriter(stdout)
	defer out.Close()
	sink := mk(out, stderr)

	msg := strings.Join(opts.Args, " ")
	sink.begin(sess.ID, msg)
	res := exe.RunTurn(ctx, msg, sink)
	sess.History = exe.History()
	if err := sess.save(dir); err != nil {
		fmt.Fprintln(stderr, "testharness oneshot: save session:", err)
		return 1
	}
	if !res.NoComplete {
		sink.end(res, msg)
	}
	switch {
	case res.Cancelled:
		fmt.Fprintln(stderr, "interrupted")
		return 130
	case res.ExitAfter != nil:
		return *res.ExitAfter
	}
	return 0
}
