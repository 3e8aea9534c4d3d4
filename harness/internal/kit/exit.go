package kit

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Unread returns how many bytes written to p's stdin pipe no process has
// read yet, and whether it could tell (p runs in a pipe mode and its stdin is
// still open). The bytes of a reader that has exited stay in the pipe until
// the daemon closes its end.
func Unread(p *process.Process) (int, bool) {
	sc, ok := p.Stdin().(syscall.Conn)
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	n, ioErr := 0, error(nil)
	if err := raw.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ioErr != nil {
		return 0, false
	}
	return n, true
}

// Delivery is what a pipe adapter knows of its turn's message when the
// harness stops talking.
type Delivery struct {
	// Written says writing the message succeeded.
	Written bool
	// After is how many bytes the adapter wrote to stdin behind the message
	// before the harness answered (cancels), which may lie unread behind a
	// message that was taken; math.MaxInt when it cannot tell.
	After int
	// Answered says the harness wrote output after the message.
	Answered bool
}

// ExitedBeforeTurn reports whether a pipe harness that has exited with st
// did so before taking the turn: writing the message failed (nobody read the
// pipe any more), or the harness never answered it and either part of the
// message still lies unread in the stdin pipe or it exited cleanly (line
// readers read ahead, so a harness already on its way out may have read the
// message without ever taking it up). A harness that answered took the
// message; any exit after that is a crash mid-turn.
func ExitedBeforeTurn(p *process.Process, st process.ExitStatus, d Delivery) bool {
	switch {
	case !d.Written:
		return true
	case d.Answered:
		return false
	}
	if n, ok := Unread(p); ok && n > d.After {
		return true
	}
	return !st.Signaled() && st.Code == 0
}

// ExitedBetweenTurns is the failure of a harness that exited (with st)
// before it took the turn's message: harness_exited, as when the session
// notices the exit before the turn, not harness_crashed.
func ExitedBetweenTurns(p *process.Process, st process.ExitStatus) *harness.Failure {
	return &harness.Failure{Type: wire.FailureHarnessExited,
		Message: fmt.Sprintf("harness %s between turns", st), Exit: &st, StderrTail: p.StderrTail()}
}
