// Package tui is the fake agent's interactive terminal front end
// ("--protocol tui"), for harness/adapter/pty: a small program in the style
// of a coding agent's TUI — a coloured prompt, a spinner while a message
// runs, coloured output, bracketed paste for multi-line messages and Ctrl-C
// to interrupt the running message. It puts its terminal in raw mode and
// does its own echo and line editing; each message runs through
// testharness/agent's directive executor.
//
// It owns the screen and the keyboard only; the directives are the
// executor's. Like the rest of the fake agent it must not import harnessd's
// own packages: it plays a foreign program.
package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/testharness/agent"
	"github.com/harnessd/harnessd/testharness/agent/frontend"
)

// Options are the tui front end's settings: the common start-up behaviours
// and its own.
type Options struct {
	frontend.Options
	// NoPromptAfter stops printing the prompt after this many turns (0:
	// always print it).
	NoPromptAfter int
}

// Prompt is the prompt the screen shows when it waits for a message; pty
// tests wait for it.
const Prompt = "\x1b[1;32mtestharness>\x1b[0m "

// Other screen elements.
const (
	tuiContinue    = "\x1b[2m...\x1b[0m "
	tuiClearLine   = "\r\x1b[2K"
	tuiHideCursor  = "\x1b[?25l"
	tuiShowCursor  = "\x1b[?25h"
	tuiPasteOn     = "\x1b[?2004h"
	tuiPasteOff    = "\x1b[?2004l"
	tuiSpinFrames  = `|/-\`
	tuiSpinEvery   = 80 * time.Millisecond
	tuiPasteStart  = "\x1b[200~"
	tuiPasteEnd    = "\x1b[201~"
	tuiBannerColor = "\x1b[1;34m"
)

// screen serialises writes to the terminal.
type screen struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *screen) write(parts ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, strings.Join(parts, ""))
}

// crlf turns newlines into the CR LF a raw-mode terminal needs.
func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// tuiSink prints a turn's output in colour, above the spinner.
type tuiSink struct {
	scr    *screen
	stderr io.Writer
}

func (s tuiSink) Text(t string) { s.scr.write(tuiClearLine, "\x1b[36m", crlf(t), "\x1b[0m\r\n") }
func (s tuiSink) Thought(t string) {
	s.scr.write(tuiClearLine, "\x1b[2;3m", crlf(t), "\x1b[0m\r\n")
}
func (s tuiSink) ToolCall(id, name string, args json.RawMessage) {
	s.scr.write(tuiClearLine, "\x1b[35m⚙ ", name, " ", string(args), "\x1b[0m\r\n")
}
func (s tuiSink) ToolResult(id, name, result string, isError bool) {
	color := "\x1b[35m"
	if isError {
		color = "\x1b[31m"
	}
	s.scr.write(tuiClearLine, color, "↳ ", crlf(result), "\x1b[0m\r\n")
}
func (s tuiSink) Error(msg string, recoverable bool) {
	s.scr.write(tuiClearLine, "\x1b[31merror: ", crlf(msg), "\x1b[0m\r\n")
}
func (s tuiSink) Raw(line string) { s.scr.write(line, "\r\n") }
func (s tuiSink) Stderr(t string) { io.WriteString(s.stderr, crlf(t)) }

// spinner animates the cursor line until stopped.
type spinner struct {
	stop, done chan struct{}
}

func startSpinner(scr *screen) *spinner {
	sp := &spinner{stop: make(chan struct{}), done: make(chan struct{})}
	scr.write(tuiHideCursor)
	go func() {
		defer close(sp.done)
		t := time.NewTicker(tuiSpinEvery)
		defer t.Stop()
		for i := 0; ; i++ {
			f := string(tuiSpinFrames[i%len(tuiSpinFrames)])
			scr.write(tuiClearLine, "\x1b[33m", f, "\x1b[0m thinking…")
			select {
			case <-t.C:
			case <-sp.stop:
				return
			}
		}
	}()
	return sp
}

func (sp *spinner) end(scr *screen) {
	close(sp.stop)
	<-sp.done
	scr.write(tuiClearLine, tuiShowCursor)
}

// submitted is a message and the context of its turn; Ctrl-C cancels it.
type submitted struct {
	msg    string
	ctx    context.Context
	cancel context.CancelFunc
}

// lineEditor turns raw keystrokes into messages: it echoes typed text,
// handles backspace, bracketed paste, Enter, Ctrl-C and Ctrl-D.
type lineEditor struct {
	scr  *screen
	msgs chan<- submitted

	mu      sync.Mutex
	buf     []byte
	running context.CancelFunc // set while a turn runs
	paste   bool
	esc     []byte // a partial escape sequence
	lastCR  bool   // the previous pasted byte was CR
}

// prompt prints the prompt and any text typed ahead.
func (ed *lineEditor) prompt() {
	ed.mu.Lock()
	typed := crlf(strings.ReplaceAll(string(ed.buf), "\n", "\n"+tuiContinue))
	ed.mu.Unlock()
	ed.scr.write(Prompt, typed)
}

// finished records that the running turn has ended.
func (ed *lineEditor) finished() {
	ed.mu.Lock()
	ed.running = nil
	ed.mu.Unlock()
}

// feed processes one read of keystrokes; it reports false at Ctrl-D.
func (ed *lineEditor) feed(b []byte) bool {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	for _, c := range b {
		if len(ed.esc) > 0 || c == 0x1b {
			ed.esc = append(ed.esc, c)
			if done := ed.escape(); !done {
				continue
			}
			ed.esc = ed.esc[:0]
			continue
		}
		if ed.paste {
			ed.pasted(c)
			continue
		}
		switch c {
		case '\r', '\n':
			ed.submit()
		case 0x7f, '\b':
			if len(ed.buf) > 0 {
				_, n := utf8.DecodeLastRune(ed.buf)
				ed.buf = ed.buf[:len(ed.buf)-n]
				ed.echo("\b \b")
			}
		case 0x03: // Ctrl-C
			if ed.running != nil {
				ed.running()
				continue
			}
			ed.buf = ed.buf[:0]
			ed.scr.write("\x1b[31m^C\x1b[0m\r\n", Prompt)
		case 0x04: // Ctrl-D
			if len(ed.buf) == 0 && ed.running == nil {
				return false
			}
		default:
			if c >= 0x20 || c == '\t' {
				ed.buf = append(ed.buf, c)
				ed.echo(string([]byte{c}))
			}
		}
	}
	return true
}

// escape consumes a key escape sequence once complete (it reports whether
// it is): the paste brackets change mode, other keys are ignored.
func (ed *lineEditor) escape() bool {
	s := ed.esc
	if len(s) < 2 {
		return false
	}
	switch s[1] {
	case '[':
		last := s[len(s)-1]
		if len(s) == 2 || !(last >= 0x40 && last <= 0x7e) {
			return len(s) > 16 // give up on nonsense
		}
		switch string(s) {
		case tuiPasteStart:
			ed.paste, ed.lastCR = true, false
		case tuiPasteEnd:
			ed.paste = false
		}
		return true
	case 'O':
		return len(s) >= 3
	default:
		return true
	}
}

// pasted inserts one byte of bracketed paste; CR and CR LF become LF.
func (ed *lineEditor) pasted(c byte) {
	switch {
	case c == '\n' && ed.lastCR:
	case c == '\r' || c == '\n':
		ed.buf = append(ed.buf, '\n')
		ed.echo("\r\n" + tuiContinue)
	default:
		ed.buf = append(ed.buf, c)
		ed.echo(string([]byte{c}))
	}
	ed.lastCR = c == '\r'
}

// echo shows typed text, unless a turn is running (typeahead is shown with
// the next prompt).
func (ed *lineEditor) echo(s string) {
	if ed.running == nil {
		ed.scr.write(s)
	}
}

func (ed *lineEditor) submit() {
	msg := string(ed.buf)
	ed.buf = ed.buf[:0]
	if ed.running != nil {
		return // typeahead Enter during a turn is dropped
	}
	ed.scr.write("\r\n")
	if strings.TrimSpace(msg) == "" {
		ed.scr.write(Prompt)
		return
	}
	// The turn runs from now on: keystrokes are typeahead and Ctrl-C
	// cancels it, even before the main loop picks it up. At most one
	// message is in flight, so the send does not block.
	ctx, cancel := context.WithCancel(context.Background())
	ed.running = cancel
	ed.msgs <- submitted{msg: msg, ctx: ctx, cancel: cancel}
}

// makeRaw puts the terminal of f in raw mode and returns a function that
// restores it; it does nothing when f is not a terminal.
func makeRaw(f *os.File) func() {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	t := *old
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return func() {}
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }
}

// terminalSize says the size of f's terminal as "ROWSxCOLS".
func terminalSize(f any) string {
	file, ok := f.(*os.File)
	if !ok {
		return "size: not a terminal"
	}
	ws, err := unix.IoctlGetWinsize(int(file.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return "size: " + err.Error()
	}
	return fmt.Sprintf("size: %dx%d", ws.Row, ws.Col)
}

// Run runs the agent as an interactive terminal program until Ctrl-D or
// the end of its input, and returns the process exit code.
func Run(opts Options, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
	if code, exit := frontend.Start(opts.Options, stderr); exit {
		return code
	}
	if f, ok := stdin.(*os.File); ok {
		defer makeRaw(f)()
	}
	scr := &screen{w: stdout}
	scr.write(tuiPasteOn, tuiBannerColor, "testharness tui", "\x1b[0m — type a message, Ctrl-C interrupts, Ctrl-D quits\r\n")
	defer scr.write(tuiPasteOff, tuiShowCursor)
	time.Sleep(opts.SlowStart)
	if opts.NeverReady {
		select {}
	}

	exe := &agent.Executor{Directives: map[string]agent.DirectiveFunc{
		"size": agent.SayFunc(func(string) string { return terminalSize(stdout) }),
	}}
	if tools := frontend.EnvTools(opts.Options); tools != nil {
		defer tools.Close()
		exe.Tools = tools
	}
	sink := tuiSink{scr: scr, stderr: stderr}

	msgs := make(chan submitted, 1)
	ed := &lineEditor{scr: scr, msgs: msgs}
	// The reader ends at Ctrl-D or end of input; the process exits then,
	// so it needs no other stop.
	go func() {
		defer close(msgs)
		buf := make([]byte, 4096)
		for {
			n, err := stdin.Read(buf)
			if n > 0 && !ed.feed(buf[:n]) {
				return
			}
			if err != nil {
				return
			}
		}
	}()

	ed.prompt()
	turns := 0
	for in := range msgs {
		sp := startSpinner(scr)
		res := exe.RunTurn(in.ctx, in.msg, sink)
		sp.end(scr)
		ed.finished()
		in.cancel()
		if res.Cancelled {
			scr.write("\x1b[31m^C\x1b[0m\r\n")
		}
		if res.ExitAfter != nil {
			return *res.ExitAfter
		}
		turns++
		if !res.NoComplete && (opts.NoPromptAfter == 0 || turns < opts.NoPromptAfter) {
			ed.prompt()
		}
	}
	scr.write("\r\n")
	return 0
}
