package process

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// fastWrite is a pipe write's first attempt: write(2) on the non-blocking
// pipe until it is done or would block, with no deadline set and no cancel
// registered. A turn's message line fits the pipe's free space (the usual
// case), so it is written whole here; what is left (a full pipe, an error,
// a past deadline left by an earlier cancel, a closed pipe) goes through
// Write's general path, which waits under ctx and reports the error. Saving
// the deadline and the cancel's registration (a context.AfterFunc, a
// channel, two runtime timers) per write is issue 28's: they were a fifth
// of the daemon's own cost of writing a turn's message.
type fastWrite struct {
	rc syscall.RawConn // nil: the pipe is not non-blocking, no fast path
	fn func(uintptr) bool
	b  []byte
	n  int
}

// setFastWrite arms the fast path for the parent's end of a stdin pipe, when
// it is non-blocking (os.Pipe's ends are: the runtime polls them); a
// blocking write(2) with no deadline could hang, so otherwise every write
// takes the general path.
func (p *Process) setFastWrite() {
	rc, err := p.stdin.SyscallConn()
	if err != nil {
		return
	}
	nonblocking := false
	rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblocking = err == nil && fl&unix.O_NONBLOCK != 0
	})
	if !nonblocking {
		return
	}
	p.fast.rc = rc
	p.fast.fn = p.fast.write
}

// tryWrite writes what of b the pipe takes at once and returns how much;
// the caller holds writeMu.
func (p *Process) tryWrite(b []byte) int {
	f := &p.fast
	if f.rc == nil {
		return 0
	}
	f.b, f.n = b, 0
	err := f.rc.Write(f.fn)
	n := f.n
	f.b, f.n = nil, 0
	if err != nil {
		return 0 // nothing was written (a past deadline, a closed pipe)
	}
	return n
}

// write is RawConn.Write's callback: it never asks to wait.
func (f *fastWrite) write(fd uintptr) bool {
	for f.n < len(f.b) {
		n, err := unix.Write(int(fd), f.b[f.n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		f.n += n
	}
	return true
}
