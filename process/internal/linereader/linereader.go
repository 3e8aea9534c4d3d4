// Package linereader splits a pollable pipe into bounded lines on the
// caller's goroutine. A read is abandoned when its context ends, by setting
// a past read deadline on the pipe; the bytes buffered and the part of a
// line read so far survive it, so the next read goes on with the same
// line. Package process reads a child's stdout with it (Process.ReadLine
// and the goroutine behind Process.Lines); this package knows nothing of
// processes.
package linereader

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Pipe is the read end a Reader reads from and sets deadlines on.
type Pipe interface {
	SetReadDeadline(t time.Time) error
}

// Line is one line without its line ending (a newline, and a CR before it).
type Line struct {
	// Text is the line, a copy the caller owns; when TooLong is set it is
	// only a prefix.
	Text []byte
	// TooLong reports a line longer than the limit.
	TooLong bool
	// Size is the full length of the line in bytes (a trimmed CR counts).
	Size int
}

// Reader splits what r reads into lines of at most limit bytes; of longer
// ones it keeps a prefix of keep bytes. It is for one caller at a time.
type Reader struct {
	pipe    Pipe
	br      *bufio.Reader
	limit   int
	keep    int
	acc     []byte
	size    int
	tooLong bool
	eof     bool
	// clear says the pipe has no read deadline; false when one may be set
	// (at first, and after a cancel set a past one to end a read).
	clear bool
}

// New returns a Reader of r, which reads pipe (possibly through a wrapper
// that counts bytes).
func New(pipe Pipe, r io.Reader, limit, keep int) *Reader {
	return &Reader{pipe: pipe, br: bufio.NewReaderSize(r, 64<<10), limit: limit, keep: min(keep, limit)}
}

// Next returns the next line; io.EOF once the pipe is closed (by the
// writer, or os.ErrClosed by the reader's side) and every line before is
// returned, a last line without a newline first; or ctx's error, with the
// part of a line read so far kept for the next call. ctx's deadline is
// kept by ctx's own timer, which ends the read as a cancel does: the pipe
// gets no deadline of its own at each call (a runtime timer set per turn,
// issue 28).
func (r *Reader) Next(ctx context.Context) (Line, error) {
	if r.eof {
		return Line{}, io.EOF
	}
	// The usual line is whole in the buffer: no deadline, no syscall.
	if b, _ := r.br.Peek(r.br.Buffered()); bytes.IndexByte(b, '\n') >= 0 {
		frag, _ := r.br.ReadSlice('\n')
		r.add(frag)
		return r.take(true), nil
	}
	if err := ctx.Err(); err != nil {
		return Line{}, err
	}
	r.clearDeadline()
	stop := context.AfterFunc(ctx, func() { r.pipe.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		frag, err := r.br.ReadSlice('\n')
		r.add(frag)
		switch {
		case err == nil:
			return r.take(true), nil
		case err == bufio.ErrBufferFull:
			continue
		}
		if l, done, err := r.readErr(ctx, err); done {
			return l, err
		}
	}
}

// add accounts for a fragment of the current line, keeping a bounded prefix.
func (r *Reader) add(frag []byte) {
	if len(frag) == 0 {
		return
	}
	r.size += len(frag)
	content := r.size
	if frag[len(frag)-1] == '\n' {
		content--
	}
	switch {
	case r.tooLong:
	case content > r.limit:
		r.tooLong = true
		r.acc = append(r.acc, frag[:min(len(frag), max(0, r.keep-len(r.acc)))]...)
		r.acc = r.acc[:min(len(r.acc), r.keep)]
	default:
		r.acc = append(r.acc, frag...)
	}
}

// take ends the current line; newline says whether it ended with one.
func (r *Reader) take(newline bool) Line {
	size := r.size
	if newline {
		size-- // the newline is not part of the line
	}
	text := bytes.TrimSuffix(bytes.TrimSuffix(r.acc, []byte{'\n'}), []byte{'\r'})
	l := Line{Text: bytes.Clone(text), TooLong: r.tooLong, Size: size}
	if cap(r.acc) > 64<<10 {
		r.acc = nil
	}
	r.acc, r.size, r.tooLong = r.acc[:0], 0, false
	return l
}

// readErr handles a failed read: done is false when reading should go on
// (past a deadline left by an earlier call's cancel).
func (r *Reader) readErr(ctx context.Context, err error) (Line, bool, error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		r.clear = false
		if ctx.Err() != nil {
			return Line{}, true, ctx.Err()
		}
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			// ctx's own timer is due: wait for it, so that callers see
			// ctx.Err() set when Next returns it.
			<-ctx.Done()
			return Line{}, true, ctx.Err()
		}
		r.clearDeadline()
		return Line{}, false, nil
	}
	if err != io.EOF && !errors.Is(err, os.ErrClosed) {
		return Line{}, true, fmt.Errorf("read stdout: %w", err)
	}
	r.eof = true
	if r.size > 0 {
		return r.take(false), true, nil // the last line, without a newline
	}
	return Line{}, true, io.EOF
}

// clearDeadline clears a read deadline that a cancel may have left on the
// pipe.
func (r *Reader) clearDeadline() {
	if r.clear {
		return
	}
	r.pipe.SetReadDeadline(time.Time{})
	r.clear = true
}
