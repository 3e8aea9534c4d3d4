package tenancy

import (
	"errors"

	"golang.org/x/sys/unix"
)

// KillRest kills every process of the namespace but the init (kill(-1)
// from PID 1 spares only itself) and reaps them all. With no child left
// to reap it kills nothing: every process of the namespace is the init's
// descendant (nothing joins it from outside: the daemon never does, and
// the harness's seccomp filter refuses setns), and an orphan is the
// init's child before its parent is reaped, so an init without children
// is alone. kill(-1) walks every process of the host to find the
// namespace's; a harness that leaves none (the usual reset) is spared it.
// The recycle's check (OnlyInitLeft) still reads /proc. It runs in the
// init only.
func KillRest() {
	if !hasChildren() {
		return
	}
	unix.Kill(-1, unix.SIGKILL)
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil { // ECHILD: nothing left
			return
		}
	}
}

// hasChildren reports whether the init has a child, running or a zombie
// (waitid's ECHILD says it has none); an error other than ECHILD counts
// as a child, so that the caller kills and reaps.
func hasChildren() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return !errors.Is(err, unix.ECHILD)
	}
}
