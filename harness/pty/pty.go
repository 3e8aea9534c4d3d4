package pty

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/vt"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Name is the adapter's registered name.
const Name = "pty"

func init() {
	harness.RegisterAdapter(Name, func(cfg *harness.Config) (harness.Adapter, error) {
		if _, err := ParseOptions(cfg.Harness.Options); err != nil {
			return nil, err
		}
		return New(), nil
	})
}

// exitWait is how long a turn waits, after the terminal hung up, for the
// program's exit status to be known.
const exitWait = 2 * time.Second

// readySeen bounds the text kept while waiting for the ready pattern.
const readySeen = 16 << 10

// Adapter drives a harness in a pseudo-terminal.
type Adapter struct {
	mu          sync.Mutex
	p           *process.Process
	opts        *Options
	grace       time.Duration
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
	opts, err := ParseOptions(l.Options)
	if err != nil {
		return harness.Wrap(wire.FailureStartupFailed, err, "bad pty options")
	}
	if len(l.Command) == 0 {
		return harness.Fail(wire.FailureStartupFailed, "no harness command configured")
	}
	p, err := l.Supervisor.Start(process.Spec{
		Name:   "harness",
		Path:   l.Command[0],
		Args:   l.Command[1:],
		Dir:    l.Workspace,
		Env:    kit.Env(l, "TERM="+opts.Term),
		PTY:    &process.PTY{Rows: opts.Rows, Cols: opts.Cols},
		Logger: l.Logger,
	})
	if err != nil {
		return kit.StartFailure(err)
	}
	term := &vt.Text{}
	term.SetSize(int(opts.Rows), int(opts.Cols))
	sctx, cancel := context.WithTimeout(ctx, l.StartupTimeout)
	defer cancel()
	early, err := waitReady(sctx, p, term, opts)
	if err != nil {
		return startFailed(ctx, p, err, l.StartupTimeout)
	}
	a.mu.Lock()
	a.p, a.opts, a.grace, a.term = p, opts, l.StopGrace, term
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
// lines it printed before.
func waitReady(ctx context.Context, p *process.Process, term *vt.Text, o *Options) ([]string, error) {
	var early []string
	var seen string
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
			early = append(early, lines...)
			ready := false
			if o.Ready != nil {
				if len(lines) > 0 {
					seen += strings.Join(lines, "\n") + "\n"
					if len(seen) > readySeen {
						seen = seen[len(seen)-readySeen:]
					}
				}
				window := strings.Join(append(term.Window(), term.Pending()), "\n")
				ready = o.Ready.MatchString(seen + window)
			} else if o.Prompt != nil {
				ready = o.Prompt.MatchString(term.BeforeCursor())
			}
			if ready {
				term.Settle()
				return append(early, term.TakeLines()...), nil
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

var errHungUp = errors.New("terminal hung up")

// startFailed kills the tree and describes why start-up failed.
func startFailed(ctx context.Context, p *process.Process, cause error, timeout time.Duration) error {
	if errors.Is(cause, errHungUp) {
		t := time.NewTimer(exitWait)
		select {
		case <-p.Exited():
		case <-t.C:
		}
		t.Stop()
	}
	p.Stop(context.WithoutCancel(ctx), 0)
	f := harness.Wrap(wire.FailureStartupFailed, cause, "harness did not become ready")
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		f.Message = fmt.Sprintf("harness did not become ready within %s", timeout)
	case errors.Is(cause, errHungUp):
		f.Message = "harness closed its terminal during start-up"
	}
	if st, ok := p.ExitStatus(); ok {
		f.Exit = &st
		if errors.Is(cause, errHungUp) {
			f.Message = fmt.Sprintf("harness %s during start-up", st)
		}
	}
	f.StderrTail = vt.Strip(p.StderrTail())
	return f
}

// answer writes the replies to the terminal queries the program made.
func answer(ctx context.Context, p *process.Process, term *vt.Text) {
	if r := term.TakeReplies(); len(r) > 0 {
		p.Write(ctx, r)
	}
}

func textEvent(text string) wire.Event {
	return wire.Text(wire.OriginHarness, text)
}

func (a *Adapter) proc() *process.Process {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.p
}

// Interrupt types the interrupt key (Ctrl-C by default) into the terminal
// during a turn; the turn then ends by its usual rules, marked Cancelled.
// An interrupt that comes while the message is still being typed is held
// until it has been, so that it interrupts the message rather than the
// typing.
func (a *Adapter) Interrupt(ctx context.Context) error {
	a.mu.Lock()
	p, running, submitted := a.p, a.running, a.submitted
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
	p := a.proc()
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

// Stop kills the harness's whole session.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	p, grace := a.p, a.grace
	a.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Stop(ctx, grace)
}

// Alive reports whether the harness is running.
func (a *Adapter) Alive() bool {
	p := a.proc()
	return p != nil && p.Alive()
}

// Diagnostics reports exit status, the stripped tail of the terminal and pid.
func (a *Adapter) Diagnostics() (*process.ExitStatus, string, int) {
	exit, tail, pid := kit.Diagnostics(a.proc())
	return exit, vt.Strip(tail), pid
}
