package adapterkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// ExitWait is how long the base waits, after a harness closed its output or
// stopped talking, for its exit status to be known.
const ExitWait = 2 * time.Second

// ErrHungUp is what a ReadyFunc wraps when the harness went away during
// start-up (closed its output or terminal, stopped reading its input): the
// base then waits up to ExitWait for the exit status before it describes
// the failure.
var ErrHungUp = errors.New("hung up")

// Spec is what an adapter adds to a Launch to start its harness. The zero
// value runs l.Command as it is, over pipes in line mode, with Env(l).
type Spec struct {
	// Args replaces l.Command[1:] when not nil.
	Args []string
	// Env holds NAME=value entries set on top of Env(l) (e.g. the line
	// protocol's HARNESSD_PROTOCOL=1).
	Env []string
	// PTY runs the harness in a pseudo-terminal instead of over pipes.
	PTY *process.PTY
	// StopByEOF makes Stop close the harness's stdin first and wait up to
	// half the stop grace for it to exit by itself, before it signals the
	// tree with the rest of the grace.
	StopByEOF bool
	// Tail rewrites the stderr tail that failures and Diagnostics report
	// (e.g. stripping terminal escapes); nil reports it as it is.
	Tail func(string) string
}

// ReadyFunc waits until the started harness p is ready. Its ctx ends at the
// launch's startup timeout. A *harness.Failure it returns is reported as it
// is, with the exit status and stderr tail added where missing; any other
// error is described by Base.Start.
type ReadyFunc func(ctx context.Context, p *process.Process) error

// Base is the lifecycle half of a process-backed adapter: one harness
// process per episode. Adapters embed it and get Stop, Alive and
// Diagnostics from it. The zero value has no harness: Stop returns nil,
// Alive reports false and Diagnostics returns zero values. Its methods are
// safe for concurrent use.
type Base struct {
	mu        sync.Mutex
	p         *process.Process
	grace     time.Duration
	maxLine   int
	outLimit  int64
	stopByEOF bool
	tail      func(string) string
}

// Start starts the harness of l as s describes, with Env(l) plus s.Env, in
// the episode's workspace, and runs ready (nil: ready at once) within
// l.StartupTimeout (0: no bound but ctx). On success the process becomes
// the Base's and is returned. On failure nothing is left running and the
// error is a startup_failed *harness.Failure: a missing command, a spawn
// error, a harness that exited or went away during start-up (with its exit
// status), one that "did not become ready within" the timeout, or whatever
// ready reported; each with the stderr tail. A failed Start keeps the
// previous episode's process for Diagnostics.
func (b *Base) Start(ctx context.Context, l *harness.Launch, s Spec, ready ReadyFunc) (*process.Process, error) {
	if len(l.Command) == 0 {
		return nil, harness.Fail(wire.FailureStartupFailed, "no harness command configured")
	}
	if l.Supervisor == nil {
		return nil, harness.Fail(wire.FailureStartupFailed, "no process supervisor in the launch")
	}
	args := s.Args
	if args == nil {
		args = l.Command[1:]
	}
	maxLine := MaxLineBytes(l)
	tail := s.Tail
	if tail == nil {
		tail = func(t string) string { return t }
	}
	spec := process.Spec{
		Name:     "harness",
		Path:     l.Command[0],
		Args:     args,
		Dir:      l.Dir(),
		Env:      Env(l, s.Env...),
		PTY:      s.PTY,
		Logger:   l.Logger,
		Launcher: l.Launcher,

		MaxStartupBytes: OutputLimit(l),
	}
	if s.PTY == nil {
		spec.MaxLineBytes = maxLine
	}
	p, err := l.Supervisor.Start(spec)
	if err != nil {
		f := startFailure(err)
		f.StderrTail = tail(f.StderrTail)
		return nil, f
	}
	if ready != nil {
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if l.StartupTimeout > 0 {
			sctx, cancel = context.WithTimeout(ctx, l.StartupTimeout)
		}
		err := ready(sctx, p)
		timedOut := err != nil && sctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil {
			return nil, notReady(ctx, p, err, timedOut, l.StartupTimeout, tail)
		}
	}
	b.mu.Lock()
	b.p, b.grace, b.maxLine, b.outLimit, b.stopByEOF, b.tail = p, l.StopGrace, maxLine, OutputLimit(l), s.StopByEOF, tail
	b.mu.Unlock()
	return p, nil
}

// MaxLineBytes returns the line limit of l's harness output: l.MaxLineBytes,
// or process.DefaultMaxLineBytes when that is not positive.
func MaxLineBytes(l *harness.Launch) int {
	if l.MaxLineBytes <= 0 {
		return process.DefaultMaxLineBytes
	}
	return l.MaxLineBytes
}

// OutputLimit returns the bound of l's harness output before it is ready
// (and of what an adapter keeps of its output between turns):
// l.OutputLimit (episode.output_limit), or process.DefaultMaxStartupBytes
// when that is not positive.
func OutputLimit(l *harness.Launch) int64 {
	if l.OutputLimit <= 0 {
		return process.DefaultMaxStartupBytes
	}
	return l.OutputLimit
}

// OutputKnob is the configuration key of the output limit, named in the
// failures it causes.
const OutputKnob = "episode.output_limit"

// startFailure turns an error from starting or readying a process into a
// startup_failed Failure carrying the exit status and stderr tail.
func startFailure(err error) *harness.Failure {
	f := harness.Wrap(wire.FailureStartupFailed, err, "harness did not start")
	var se *process.StartError
	if errors.As(err, &se) {
		f.Message = se.Error()
		f.Exit, f.StderrTail = se.Exit, se.StderrTail
	}
	return f
}

// notReady kills p, whose ready function failed with err, and describes why.
func notReady(ctx context.Context, p *process.Process, err error, timedOut bool, timeout time.Duration, tail func(string) string) *harness.Failure {
	gone := errors.Is(err, ErrHungUp) || errors.Is(err, process.ErrNotRunning) || errors.Is(err, process.ErrStopped)
	if gone {
		WaitExit(ctx, p)
	}
	p.Stop(context.WithoutCancel(ctx), 0)
	f, described := harness.AsFailure(err)
	var se *process.StartError
	var oe *process.StartupOutputError
	switch {
	case described:
	case errors.As(err, &oe):
		// A *StartError of WaitReady, or the adapter's own check.
		f = &harness.Failure{Type: wire.FailureStartupFailed, Err: err, Message: fmt.Sprintf(
			"harness wrote more than %d bytes of output before it was ready (%s bounds start-up output as it does a turn's)",
			oe.Limit, OutputKnob)}
	case timedOut:
		f = startFailure(err) // keeps a StartError's exit status and tail
		f.Message = fmt.Sprintf("harness did not become ready within %s", timeout)
	case errors.As(err, &se):
		f = startFailure(err)
	case gone:
		f = harness.Wrap(wire.FailureStartupFailed, err, "harness stopped talking during start-up")
		if st, ok := p.ExitStatus(); ok {
			f.Message = fmt.Sprintf("harness %s during start-up (%v)", st, err)
		}
	default:
		f = harness.Wrap(wire.FailureStartupFailed, err, "harness start-up failed")
	}
	if st, ok := p.ExitStatus(); ok && f.Exit == nil {
		f.Exit = &st
	}
	if f.StderrTail == "" {
		f.StderrTail = p.StderrTail()
	}
	f.StderrTail = tail(f.StderrTail)
	return f
}

// WaitExit waits up to ExitWait (or until ctx ends) for p to exit and
// returns its exit status if it is known by then.
func WaitExit(ctx context.Context, p *process.Process) (process.ExitStatus, bool) {
	t := time.NewTimer(ExitWait)
	defer t.Stop()
	select {
	case <-p.Exited():
	case <-t.C:
	case <-ctx.Done():
	}
	return p.ExitStatus()
}

// Process returns the harness process of the last successful Start (nil
// before one).
func (b *Base) Process() *process.Process {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.p
}

// OutputLimit returns the output bound of the running harness's launch
// (see the function OutputLimit; 0 before Start).
func (b *Base) OutputLimit() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.outLimit
}

// MaxLineBytes returns the line limit of the running harness: the launch's
// MaxLineBytes, or process.DefaultMaxLineBytes when that was not positive
// (0 before Start).
func (b *Base) MaxLineBytes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.maxLine
}

// CheckOutput returns the output_limit failure for line, read from the
// harness during a turn that began when the harness had written start bytes
// (process.OutputBytes), or nil: a line longer than the line limit, one of
// more than MaxLineValues JSON objects, arrays and array elements, one
// taking the turn's over their bound (values.Check; values nil: no bound
// for the turn), or more than in.OutputLimit bytes (when positive) written
// in the turn.
func (b *Base) CheckOutput(line process.Line, in harness.TurnInput, start int64, values *TurnValues) error {
	if line.TooLong {
		return harness.Fail(wire.FailureOutputLimit,
			"harness wrote a %d-byte line (limit %d)", line.Size, b.MaxLineBytes())
	}
	if err := values.Check(line.Text); err != nil {
		return err
	}
	if p := b.Process(); p != nil && in.OutputLimit > 0 && p.OutputBytes()-start > in.OutputLimit {
		return harness.Fail(wire.FailureOutputLimit,
			"harness wrote more than %d bytes in one turn (episode.output_limit)", in.OutputLimit)
	}
	return nil
}

// Stop ends the harness and kills its whole process tree within the
// launch's StopGrace (SIGTERM, then SIGKILL); with Spec.StopByEOF it first
// closes the harness's stdin and waits up to half the grace for it to exit
// by itself. It is idempotent and returns nil when never started.
func (b *Base) Stop(ctx context.Context) error {
	b.mu.Lock()
	p, grace, eof := b.p, b.grace, b.stopByEOF
	b.mu.Unlock()
	if p == nil {
		return nil
	}
	begin := time.Now()
	if eof && p.Alive() {
		p.CloseStdin() // an error means it is closed already
		t := time.NewTimer(grace / 2)
		select {
		case <-p.Exited():
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if err := p.Stop(ctx, max(0, grace-time.Since(begin))); err != nil {
		return fmt.Errorf("stop harness: %w", err)
	}
	return nil
}

// Alive reports whether the harness process is running.
func (b *Base) Alive() bool {
	p := b.Process()
	return p != nil && p.Alive()
}

// Diagnostics returns the harness's exit status (nil while it runs or
// before Start), its stderr tail (through Spec.Tail) and its pid (0 before
// Start), as harness.Adapter.Diagnostics does.
func (b *Base) Diagnostics() (*process.ExitStatus, string, int) {
	b.mu.Lock()
	p, tail := b.p, b.tail
	b.mu.Unlock()
	if p == nil {
		return nil, "", 0
	}
	var exit *process.ExitStatus
	if st, ok := p.ExitStatus(); ok {
		exit = &st
	}
	t := p.StderrTail()
	if tail != nil {
		t = tail(t)
	}
	return exit, t, p.Pid()
}
