package process

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// childWaiter collects one tracked child's exit status without holding an OS
// thread while the child lives. The child's pidfd (Linux 5.10+ for
// PIDFD_NONBLOCK) is registered with the Go runtime's network poller, the one
// epoll loop every goroutine waiting on a socket or pipe already shares: a
// waiting goroutine is parked, not blocked in waitid, so thousands of live
// children cost thousands of parked goroutines and no threads. When the
// pidfd becomes readable (the child exited) the child is reaped by pid with
// wait4(WNOHANG), which gives the exact wait status.
//
// Without pidfds (old kernels, seccomp) it falls back to a blocking wait4 in
// its goroutine, one thread per live child, as os/exec does.
type childWaiter struct {
	proc  *os.Process
	pid   int
	pidfd *os.File // nil: blocking fallback
}

// watchChild prepares the wait for proc, a child just started and tracked in
// children (so no other reaper takes its status before the pidfd is open).
func watchChild(proc *os.Process) *childWaiter {
	w := &childWaiter{proc: proc, pid: proc.Pid}
	fd, err := unix.PidfdOpen(proc.Pid, unix.PIDFD_NONBLOCK)
	if err == nil {
		w.pidfd = os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", proc.Pid))
	}
	return w
}

// wait blocks the calling goroutine until the child has exited and reaps it.
func (w *childWaiter) wait() (syscall.WaitStatus, error) {
	defer w.proc.Release()
	if w.pidfd == nil {
		return w.waitBlocking()
	}
	defer w.pidfd.Close()
	rc, err := w.pidfd.SyscallConn()
	if err != nil {
		return w.waitBlocking()
	}
	var ws syscall.WaitStatus
	var werr error
	err = rc.Read(func(uintptr) bool {
		for {
			pid, err := syscall.Wait4(w.pid, &ws, syscall.WNOHANG, nil)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case err != nil:
				werr = fmt.Errorf("wait4 %d: %w", w.pid, err)
				return true
			}
			return pid == w.pid // 0: still running, wait for the pidfd
		}
	})
	if err != nil {
		return 0, fmt.Errorf("wait for pidfd of %d: %w", w.pid, err)
	}
	return ws, werr
}

func (w *childWaiter) waitBlocking() (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(w.pid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("wait4 %d: %w", w.pid, err)
		}
		return ws, nil
	}
}
