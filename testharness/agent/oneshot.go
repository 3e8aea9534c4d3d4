package agent

import (
	"bufio"
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
	"syscall"
)

// The oneshot front end ("--protocol oneshot") runs one turn per process,
// like "codex exec", "gemini -p" or "opencode run": the message is the
// positional arguments, the conversation is saved per session id in a
// directory, --resume ID continues it, and the output is printed in one of
// several formats (see oneShotFormats). SIGINT interrupts the turn: it ends
// as cancelled and the process exits 130.

func init() {
	Protocols["oneshot"] = RunOneShot
}

// oneShotFormats are the output formats of the oneshot front end.
var oneShotFormats = map[string]func(w *lineWriter, stderr io.Writer) oneShotSink{
	"jsonl":    newJSONLShot,
	"text":     newTextShot,
	"codex":    newCodexShot,
	"gemini":   newGeminiShot,
	"opencode": newOpenCodeShot,
}

// oneShotSink is a Sink that also frames the turn.
type oneShotSink interface {
	Sink
	begin(sessionID, msg string)
	end(out Outcome, msg string)
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

// RunOneShot runs one turn with the positional arguments as the message and
// returns the process exit code.
func RunOneShot(opts Options, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
	if opts.IgnoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if opts.StartupStderr != "" {
		fmt.Fprintln(stderr, opts.StartupStderr)
	}
	if opts.CrashOnStart != 0 {
		fmt.Fprintf(stderr, "fatal: crash on start (code %d)\n", opts.CrashOnStart)
		return opts.CrashOnStart
	}
	format := opts.Format
	if format == "" {
		format = "jsonl"
	}
	mk, ok := oneShotFormats[format]
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
	exe := &Executor{Self: selfPath(), Directives: map[string]DirectiveFunc{
		"argv": SayFunc(func(string) string { return argvJSON(opts.Args) }),
	}}
	exe.history = append(exe.history, sess.History...)
	exe.turns = len(sess.History)
	if url := os.Getenv("HARNESSD_MCP_URL"); url != "" {
		tools := &MCPTools{URL: url, Token: os.Getenv("HARNESSD_MCP_TOKEN"), ProtocolVersion: opts.MCPProtocol}
		defer tools.Close()
		exe.Tools = tools
	}
	out := &lineWriter{w: bufio.NewWriterSize(stdout, 64<<10), closer: stdout}
	defer out.close()
	sink := mk(out, stderr)

	msg := strings.Join(opts.Args, " ")
	sink.begin(sess.ID, msg)
	res := exe.RunTurn(ctx, msg, sink)
	sess.History = exe.history
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
