package process

import (
	"context"
	"errors"
	"io"

	"github.com/harnessd/harnessd/process/internal/linereader"
)

// Errors of ReadLine's misuse.
var (
	// ErrLinesMode is returned by ReadLine once Lines has handed stdout to
	// its goroutine.
	ErrLinesMode = errors.New("stdout is read through Lines")
	// ErrReadBusy is returned by a ReadLine that overlaps another.
	ErrReadBusy = errors.New("another ReadLine is in progress")
	// ErrNotLineMode is returned by ReadLine outside StdioLines pipe mode.
	ErrNotLineMode = errors.New("stdout is not read as lines")
)

func newLineReader(p *Process) *linereader.Reader {
	return linereader.New(p.stdout, countingReader{r: p.stdout, p: p}, p.spec.MaxLineBytes, maxTooLongPrefix)
}

// ReadLine returns the next stdout line in StdioLines pipe mode, read on
// the caller's goroutine. Line.Text is the caller's own copy. ReadLine
// returns io.EOF once the child has closed stdout (or Stop has closed the
// parent's end) and every line before is read; a last line without a
// newline is returned first. When ctx ends first it returns ctx's error,
// and the part of a line read so far is kept for the next call.
//
// Lines and ReadLine are two ways to read the same stdout, and a consumer
// uses one at a time: once Lines is called stdout belongs to its goroutine
// for good and ReadLine fails with ErrLinesMode (lines not yet read by
// ReadLine, even a partial one, go to the channel); overlapping ReadLine
// calls fail with ErrReadBusy. Unread output stays in the pipe, so a child
// that writes while nobody reads blocks once the pipe is full; Stop still
// ends it.
func (p *Process) ReadLine(ctx context.Context) (Line, error) {
	if p.lr == nil {
		return Line{}, ErrNotLineMode
	}
	if p.linesOn.Load() {
		return Line{}, ErrLinesMode
	}
	if !p.rmu.TryLock() {
		return Line{}, ErrReadBusy
	}
	defer p.rmu.Unlock()
	if p.linesOn.Load() { // Lines was called while we waited for rmu
		return Line{}, ErrLinesMode
	}
	l, err := p.lr.Next(ctx)
	return Line(l), err
}

// Lines delivers stdout lines in StdioLines pipe mode; it is closed at EOF
// (or when Stop tears the readers down). The first call starts the
// goroutine that feeds it, after any ReadLine in progress has returned;
// from then on ReadLine fails with ErrLinesMode. It is nil in other modes.
//
// Lines is for a consumer that reads until EOF (a turn's own process): its
// goroutine reads ahead into a buffer of Spec.LineBuffer lines, which may
// hold LineBuffer × MaxLineBytes bytes (1 GiB by default) while the
// consumer does not read. A consumer that pauses between reads (a
// long-lived harness between turns) uses ReadLine, which leaves what it
// has not read in the pipe, where a child that writes on blocks.
func (p *Process) Lines() <-chan Line {
	if p.lr == nil {
		return nil
	}
	p.linesOnce.Do(p.startLines)
	return p.lines
}

// startLines starts the goroutine of Lines, unless Stop is already tearing
// the readers down (then the channel is closed at once).
func (p *Process) startLines() {
	p.lines = make(chan Line, p.spec.LineBuffer)
	p.ioMu.Lock()
	defer p.ioMu.Unlock()
	p.linesOn.Store(true)
	if p.ioDone {
		close(p.lines)
		return
	}
	p.readers.Add(1)
	go p.readLines()
}

// readLines feeds Lines from the line reader until EOF or Stop.
func (p *Process) readLines() {
	defer p.readers.Done()
	defer close(p.lines)
	p.rmu.Lock()
	defer p.rmu.Unlock()
	for {
		l, err := p.lr.Next(context.Background())
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.log.Warn("stdout read failed", "err", err)
			}
			return
		}
		if !deliver(p.lines, Line(l), p.closing) {
			return
		}
	}
}

// deliver sends v on ch and reports whether it did. While ch has room it
// always does, even once closing is closed: what the reader took from the
// process's output before Stop tore the readers down is the caller's (the
// harness's last words). Only a full ch that nobody drains gives way to
// closing.
func deliver[T any](ch chan<- T, v T, closing <-chan struct{}) bool {
	select {
	case ch <- v:
		return true
	default:
	}
	select {
	case ch <- v:
		return true
	case <-closing:
		return false
	}
}
