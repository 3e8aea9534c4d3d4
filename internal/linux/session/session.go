// Package session is where a sandboxed harness stands among sessions and
// process groups. Every setsid(2) makes a new scheduling group
// where the kernel groups tasks by session (CONFIG_SCHED_AUTOGROUP, on by
// default, for tasks in the root CPU cgroup): CFS then gives each group
// one share, split across the CPUs its tasks run on. A harness leading a
// session of its own would weigh as much as the whole daemon, which
// serves every session, and with many harnesses stepping at once the
// daemon falls behind all of them (docs/security.md, "Sessions"). So a
// sandbox makes no session: the init and the harness stay in
// the daemon's session, as in process isolation, with no controlling
// terminal (DropControllingTerminal); a harness's CPU is bounded by
// limits.cpu (cpu.max), not by where the kernel happens to group it. Only
// a harness on a pty leads a session, since only a session leader can
// take a controlling terminal.
//
// It knows nothing of sandboxes: process/sandbox's init and exec stage
// call it; it never signals a process and never opens anything but
// /dev/tty.
package session

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// DropControllingTerminal detaches the calling process (the init, which
// is not a session leader) from the daemon's controlling terminal, if the
// daemon has one, before it forks anything: its children are born without
// one, and a process that is not a session leader cannot take one again,
// so /dev/tty (bound into the sandbox) opens nothing (ENXIO) and the
// operator's terminal is out of reach (TIOCSTI, job control, reading it).
func DropControllingTerminal() error {
	fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENOENT):
		return nil // no controlling terminal (a service's daemon), or no /dev/tty
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		// The device is closed to this process (its mode, a device
		// cgroup): to the harness too, which runs as no more than the
		// init's ids under the same cgroups.
		return nil
	case err != nil:
		return fmt.Errorf("open the controlling terminal to give it up: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, unix.TIOCNOTTY, 0); err != nil {
		return fmt.Errorf("give up the controlling terminal: %w", err)
	}
	return nil
}

// Join makes the calling process (the sandbox's exec stage, about to
// execute the harness) the leader of a process group of its own (the group the init forwards
// signals to), in the daemon's session; with tty, the
// leader of a new session whose controlling terminal is the pty on stdin.
func Join(tty bool) error {
	if !tty {
		if err := unix.Setpgid(0, 0); err != nil {
			return fmt.Errorf("process group: %w", err)
		}
		return nil
	}
	if _, err := unix.Setsid(); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	if err := unix.IoctlSetInt(0, unix.TIOCSCTTY, 0); err != nil {
		return fmt.Errorf("controlling terminal: %w", err)
	}
	return nil
}
