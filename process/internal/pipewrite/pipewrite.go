// Package pipewrite writes to a non-blocking pipe what it takes at once,
// without a deadline or a cancel: a write's first attempt. Package process
// uses it for a child's stdin (Process.Write), whose general path (a
// deadline from the caller's context, a cancel that ends a blocked write)
// then takes what is left; this package knows nothing of processes or
// contexts.
package pipewrite

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Writer makes first attempts at writes to one pipe. It is for one writer
// at a time (the caller serializes its writes).
type Writer struct {
	rc syscall.RawConn
	fn func(uintptr) bool
	b  []byte
	n  int
}

// New returns a Writer of f, the write end of a pipe, or nil when f is not
// non-blocking (os.Pipe's ends are: the runtime polls them): a blocking
// write(2) without a deadline could hang, so then every write takes the
// caller's general path.
func New(f *os.File) *Writer {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblocking = err == nil && fl&unix.O_NONBLOCK != 0
	})
	if !nonblocking {
		return nil
	}
	w := &Writer{rc: rc}
	w.fn = w.write
	return w
}

// Try writes what of b the pipe takes at once and returns how much: all of
// b when it fits the pipe's free space (a turn's message line, usually);
// less when the pipe fills; 0 on an error, a closed pipe or a past
// deadline left on it, which the general path then reports or clears. A
// nil Writer writes nothing.
func (w *Writer) Try(b []byte) int {
	if w == nil {
		return 0
	}
	w.b, w.n = b, 0
	err := w.rc.Write(w.fn)
	n := w.n
	w.b, w.n = nil, 0
	if err != nil {
		return 0
	}
	return n
}

// write is RawConn.Write's callback: it never asks to wait.
func (w *Writer) write(fd uintptr) bool {
	for w.n < len(w.b) {
		n, err := unix.Write(int(fd), w.b[w.n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		w.n += n
	}
	return true
}
