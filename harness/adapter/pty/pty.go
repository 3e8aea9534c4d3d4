package pty

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/vt"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Name is the adapter's name in configurations (harness.adapter).
const Name = "pty"

// Factory makes a pty adapter for a configuration, checking its options.
func Factory(cfg *harness.Config) (harness.Adapter, error) {
	if _, err := ParseOptions(cfg.Options); err != nil {
		return nil, err
	}
	return New(), nil
}

// readySeen bounds the text kept while waiting for the ready pattern.
const readySeen = 16 << 10

// Adapter drives a harness in a pseudo-terminal. The embedded Base starts
// it and provides Stop, Alive and Diagnostics (with the terminal escapes
// stripped from the tail).
type Adapter struct {
	adapterkit.Base

	mu          sync.Mutex
	opts        *Options
	running     bool // a turn is running
	submitted   bool // the running turn's message has been typed
	interrupted bool // Interrupt was called during the running turn
	held        bool // an interrupt waits for the message to be typed
	rows, cols  uint16
	early       []wire.Event // output before ready, for the first turn

	// term is the terminal's text model; only Start and Turn use it (the
	// Session serialises them).
	term *vt.Text
}

// New returns an idle adapter.
func New() *Adapter { return &Adapter{} }

// Start runs the command in a terminal and waits until it is ready: the
// ready pattern appears (default: the prompt), or, with neither, the first
// quiet period passes.
func (a *Adapter) Start(ctx context.Context, l *harness.Launch) error {
	if l.Fork != nil {
		// No fork mechanism of its own (it is no harness.Forker): only a
		// replay continues its harness, which starts fresh.
		return harness.Fail(wire.FailureStartupFailed, "the %s adapter cannot continue a harness from a %q fork state", Name, l.Fork.Mechanism)
	}
	opts, err := ParseOptions(l.Options)
	if err != nil {
		return harness.Wrap(wire.FailureStartupFailed, err, "bad pty options")
	}
	term := &vt.Text{}
	term.SetSize(int(opts.Rows), int(opts.Cols))
	var early []string
	_, err = a.Base.Start(ctx, l, adapterkit.Spec{
		Env:  []string{"TERM=" + opts.Term},
		PTY:  &process.PTY{Rows: opts.Rows, Cols: opts.Cols},
		Tail: vt.Strip,
	}, func(ctx context.Context, p *process.Process) error {
		var err error
		early, err = waitReady(ctx, p, term, opts, adapterkit.OutputLimit(l))
		return err
	})
	if err != nil {
		return withStartTail(err)
	}
	a.mu.Lock()
	a.opts, a.term = opts, term
	a.rows, a.cols = opts.Rows, opts.Cols
	a.running, a.submitted, a.interrupted, a.held = false, false, false, false
	a.early = a.early[:0]
	if len(early) > 0 {
		a.early = append(a.early, textEvent(strings.Join(early, "\n")))
	}
	a.mu.Unlock()
	return nil
}

// waitReady reads the terminal until the program is ready and returns the
// lines it printed before. A program that writes more than limit bytes to
// its terminal first, or whose rows kept meanwhile come to more (cursor
// moves make a row longer than the bytes that drew it), fails start-up
// with a *process.StartupOutputError, which adapterkit describes.
func waitReady(ctx context.Context, p *process.Process, term *vt.Text, o *Options, limit int64) ([]string, error) {
	var early []string
	var kept int64 // bytes of early
	var seen string
	gen := term.Generation()
	var quiet *time.Timer
	var quietC <-chan time.Time
	if o.Ready == nil && o.Prompt == nil {
		quiet = time.NewTimer(o.Quiet)
		defer quiet.Stop()
		quietC = quiet.C
	}
	for {
		select {
		case chunk, ok := <-p.Output():
			if !ok {
				return early, errHungUp
			}
			term.Write(chunk)
			answer(ctx, p, term)
			lines := term.TakeLines()
			for _, l := range lines {
				kept += int64(len(l)) + 1
			}
			early = append(early, lines...)
			// Nothing to look at again unless the terminal changed: the
			// ready pattern's text and the prompt's row copy the window
			// or the cursor's row.
			changed := term.Generation() != gen
			gen = term.Generation()
			ready := false
			switch {
			case !changed:
			case o.Ready != nil:
				if len(lines) > 0 {
					seen += strings.Join(lines, "\n") + "\n"
					if len(seen) > readySeen {
						seen = seen[len(seen)-readySeen:]
					}
				}
				window := strings.Join(append(term.Window(), term.Pending()), "\n")
				ready = o.Ready.MatchString(seen + window)
			case o.Prompt != nil:
				ready = promptAtCursor(o.Prompt, term) && o.Prompt.MatchString(term.BeforeCursor())
			}
			if ready {
				term.Settle()
				return append(early, term.TakeLines()...), nil
			}
			if err := p.CheckStartupOutput(); err != nil {
				return nil, err
			}
			if kept > limit {
				return nil, &process.StartupOutputError{Limit: limit}
			}
			if quiet != nil {
				quiet.Reset(o.Quiet)
			}
		case <-quietC:
			term.Settle()
			return append(early, term.TakeLines()...), nil
		case <-ctx.Done():
			return early, ctx.Err()
		}
	}
}

// withStartTail puts the terminal's last output (the program's stderr
// goes to the terminal too) into a start-up failure's message, as the
// line-protocol adapters' messages carry their stderr tail: a program that
// dies at once ("…: No such file or directory") says why in the message
// itself.
func withStartTail(err error) error {
	f, ok := harness.AsFailure(err)
	if !ok {
		return err
	}
	tail := strings.TrimSpace(f.StderrTail)
	if tail == "" || strings.Contains(f.Message, "tail:") {
		return err
	}
	f.Message += "; terminal output tail:\n" + tail
	return f
}

// errHungUp is a terminal that hung up during start-up.
var errHungUp = fmt.Errorf("%w: terminal hung up", adapterkit.ErrHungUp)

// answer writes the replies to the terminal queries the program made.
func answer(ctx context.Context, p *process.Process, term *vt.Text) {
	if r := term.TakeReplies(); len(r) > 0 {
		p.Write(ctx, r)
	}
}

func textEvent(text string) wire.Event {
	return wire.Text(wire.OriginHarness, text)
}

// Interrupt types the interrupt key (Ctrl-C by default) into the terminal
// during a turn; the turn then ends by its usual rules, marked Cancelled.
// An interrupt that comes while the message is still being typed is held
// until it has been, so that it interrupts the message rather than the
// typing.
func (a *Adapter) Interrupt(ctx context.Context) error {
	p := a.Process()
	a.mu.Lock()
	running, submitted := a.running, a.submitted
	var key string
	if running {
		a.interrupted = true
		key = a.opts.Interrupt
		a.held = !submitted
	}
	a.mu.Unlock()
	if p == nil || !running {
		return harness.ErrNoTurn
	}
	if !submitted {
		return nil // held: the turn sends the key once the message is in
	}
	if err := p.Write(ctx, []byte(key)); err != nil {
		return fmt.Errorf("interrupt: %w", err)
	}
	return nil
}

// Resize changes the terminal size; the program gets SIGWINCH.
func (a *Adapter) Resize(rows, cols uint16) error {
	p := a.Process()
	if p == nil {
		return errors.New("pty: harness is not started")
	}
	if err := p.Resize(rows, cols); err != nil {
		return fmt.Errorf("pty: resize: %w", err)
	}
	a.mu.Lock()
	a.rows, a.cols = rows, cols
	a.mu.Unlock()
	return nil
}
