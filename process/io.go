package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// maxTooLongPrefix bounds the prefix kept of an over-long line.
const maxTooLongPrefix = 1024

// countingReader counts bytes read into an atomic counter.
type countingReader struct {
	r io.Reader
	p *Process
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.outN.Add(int64(n))
	return n, err
}

func (p *Process) startReaders() {
	switch {
	case p.ptmx != nil:
		p.output = make(chan []byte, p.spec.LineBuffer)
		p.readers.Add(1)
		go p.readPTY()
	case p.spec.Stdio == StdioRaw:
		p.raw = countingReader{r: p.stdout, p: p}
	default:
		p.lr = newLineReader(p) // read by ReadLine, or by Lines' goroutine
	}
	if p.stderr != nil {
		p.stderrDone = make(chan struct{})
		p.readers.Add(1)
		go p.readStderr()
	}
}

// readPTY forwards terminal output chunks; EIO means the terminal hung up.
func (p *Process) readPTY() {
	defer p.readers.Done()
	defer close(p.output)
	buf := make([]byte, 32<<10)
	for {
		n, err := p.ptmx.Read(buf)
		if n > 0 {
			p.outN.Add(int64(n))
			chunk := bytes.Clone(buf[:n])
			p.tail.Write(chunk)
			if !deliver(p.output, chunk, p.closing) {
				return
			}
		}
		if err != nil {
			return // io.EOF, EIO (hang-up) or closed
		}
	}
}

func (p *Process) readStderr() {
	defer p.readers.Done()
	defer close(p.stderrDone)
	var w io.Writer = p.tail
	if p.spec.Stderr != nil {
		w = io.MultiWriter(p.tail, p.spec.Stderr)
	}
	io.Copy(w, p.stderr)
}

// WaitReady consumes output until ready reports true for a stdout line (in
// PTY mode: for all terminal output so far), the child exits, or ctx ends.
// It returns the output consumed before the ready line, so that nothing the
// child printed is silently lost: at most Spec.MaxStartupBytes of it, for a
// child that writes more before it is ready fails (a *StartError of Reason
// FailOutput wrapping a *StartupOutputError). A nil ready returns at once.
//
// On failure the tree is killed and a *StartError is returned that carries
// the exit status and stderr tail.
func (p *Process) WaitReady(ctx context.Context, ready func([]byte) bool) ([][]byte, error) {
	if ready == nil {
		return nil, nil
	}
	if p.ptmx != nil {
		return p.waitReadyPTY(ctx, ready)
	}
	var early [][]byte
	for {
		l, err := p.nextLine(ctx)
		switch {
		case err == nil:
			if !l.TooLong && ready(l.Text) {
				return early, nil
			}
			if err := p.CheckStartupOutput(); err != nil {
				return nil, p.startFailed(err)
			}
			early = append(early, l.Text)
		case errors.Is(err, io.EOF):
			return early, p.startFailed(nil)
		case ctx.Err() != nil:
			return early, p.startFailed(ctx.Err())
		default:
			return early, p.startFailed(err)
		}
	}
}

// waitReadyPTY is WaitReady in PTY mode: ready sees all output so far (its
// last 64 KiB).
func (p *Process) waitReadyPTY(ctx context.Context, ready func([]byte) bool) ([][]byte, error) {
	var early [][]byte
	var acc []byte
	for {
		select {
		case data, ok := <-p.output:
			if !ok {
				return early, p.startFailed(nil)
			}
			acc = append(acc, data...)
			if len(acc) > 64<<10 {
				acc = acc[len(acc)-64<<10:]
			}
			early = append(early, data)
			if ready(acc) {
				return early, nil
			}
			if err := p.CheckStartupOutput(); err != nil {
				return nil, p.startFailed(err)
			}
		case <-ctx.Done():
			return early, p.startFailed(ctx.Err())
		}
	}
}

// CheckStartupOutput returns a *StartupOutputError when the child has
// written more than Spec.MaxStartupBytes to stdout (its terminal) since it
// started, else nil. A caller that waits for readiness by its own reads
// calls it for each line or chunk it keeps before ready.
func (p *Process) CheckStartupOutput() error {
	if p.outN.Load() > p.spec.MaxStartupBytes {
		return &StartupOutputError{Limit: p.spec.MaxStartupBytes}
	}
	return nil
}

// nextLine reads the next stdout line through ReadLine, or from Lines once
// that was called.
func (p *Process) nextLine(ctx context.Context) (Line, error) {
	if p.lr == nil {
		return Line{}, errors.New("WaitReady needs line or PTY mode")
	}
	if !p.linesOn.Load() {
		l, err := p.ReadLine(ctx)
		if !errors.Is(err, ErrLinesMode) {
			return l, err
		}
	}
	select {
	case l, ok := <-p.Lines():
		if !ok {
			return Line{}, io.EOF
		}
		return l, nil
	case <-ctx.Done():
		return Line{}, ctx.Err()
	}
}

// startFailed kills the tree and describes why start-up failed. cause is the
// context error, nil when the child closed its output, or the read error.
func (p *Process) startFailed(cause error) error {
	e := &StartError{Name: p.spec.Name, Err: cause}
	var oe *StartupOutputError
	switch {
	case errors.As(cause, &oe):
		e.Reason = FailOutput
	case errors.Is(cause, context.DeadlineExceeded):
		e.Reason = FailTimeout
	case errors.Is(cause, context.Canceled):
		e.Reason = FailCancelled
	default:
		e.Reason = FailExited
		// The child closed stdout (or it could not be read); give it a
		// moment to exit so its status and the rest of stderr are known.
		t := time.NewTimer(2 * time.Second)
		select {
		case <-p.exited:
		case <-t.C:
		}
		t.Stop()
	}
	p.Stop(context.Background(), 0)
	if st, ok := p.ExitStatus(); ok {
		e.Exit = &st
	}
	e.StderrTail = p.StderrTail()
	return e
}

// WriteLine writes b and a newline to the child's stdin as one write.
func (p *Process) WriteLine(ctx context.Context, b []byte) error {
	buf := make([]byte, 0, len(b)+1)
	buf = append(append(buf, b...), '\n')
	return p.Write(ctx, buf)
}

// Write writes b to the child's stdin (the terminal in PTY mode). It fails
// with an error wrapping ErrNotRunning when the child cannot read any more,
// and with ctx's error when ctx ends first (or has ended: nothing is
// written then). What the pipe takes at once is written without a
// deadline or a cancel (package pipewrite); only the rest waits under ctx.
func (p *Process) Write(ctx context.Context, b []byte) error {
	select {
	case <-p.stopped:
		return fmt.Errorf("write to %s: %w", p.spec.Name, ErrStopped)
	default:
	}
	p.settle()
	// Behind another write the wait keeps ctx: the writer ahead may be one
	// the child never reads.
	select {
	case p.writeMu <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.writeMu }()
	if p.ptmx != nil {
		return p.writePTY(ctx, b)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	n := p.fast.Try(b)
	if n == len(b) {
		return nil
	}
	b = b[n:]
	if d, ok := ctx.Deadline(); ok {
		p.stdin.SetWriteDeadline(d)
	} else {
		p.stdin.SetWriteDeadline(time.Time{})
	}
	// Abandon the write when ctx ends; AfterFunc costs no goroutine unless
	// that happens. A cancel that has started is waited for, so that its
	// past deadline cannot land on the next write.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		p.stdin.SetWriteDeadline(time.Unix(1, 0))
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	_, err := p.stdin.Write(b)
	if err != nil {
		return p.writeErr(ctx, err)
	}
	return nil
}

// writePTY writes to the terminal, which is in blocking mode, from a helper
// goroutine so that ctx can abandon a write the child never reads.
func (p *Process) writePTY(ctx context.Context, b []byte) error {
	errc := make(chan error, 1)
	go func() {
		_, err := p.ptmx.Write(b)
		errc <- err
	}()
	select {
	case err := <-errc:
		if err != nil {
			return p.writeErr(ctx, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Process) writeErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return context.DeadlineExceeded
	}
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EIO) {
		return fmt.Errorf("write to %s: %w", p.spec.Name, ErrNotRunning)
	}
	return fmt.Errorf("write to %s: %w", p.spec.Name, err)
}

// CloseStdin closes the child's stdin (pipe mode), signalling end of input.
func (p *Process) CloseStdin() error {
	if p.stdin == nil {
		return nil
	}
	p.writeMu <- struct{}{}
	defer func() { <-p.writeMu }()
	return p.stdin.Close()
}
