// Package session is where a sandboxed harness stands among sessions,
// scheduling groups and scheduling policies (policy.go: the sandbox's own
// processes as SCHED_BATCH, the harness as any process). The harness
// leads a session of its own: in the daemon's session it would share the
// daemon's scheduling group (CONFIG_SCHED_AUTOGROUP, on by default for
// tasks in the root CPU cgroup), whose weight any member may lower by writing
// /proc/self/autogroup, and so could starve the daemon. But every session
// is a scheduling group of its own, and CFS gives each one share, split
// across the CPUs its tasks run on: a harness would weigh as much as the
// whole daemon, which serves every session, and with many harnesses
// stepping at once the daemon falls behind all of them. So the daemon
// gives each harness's group a lower weight (Group.Lighten) where it may,
// once the harness has started up (at the lowest weight it would be
// preempted through its whole start), and a harness's CPU is bounded by
// limits.cpu (cpu.max), not by its group (docs/security.md, "Sessions").
//
// It knows nothing of sandboxes: process/sandbox's init and host side
// call it; it never signals a process.
package session

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/procfs"
)

// DropControllingTerminal detaches the calling process (the init, which
// is not a session leader) from the daemon's controlling terminal, if the
// daemon has one, before it forks anything: its children are born without
// one, and a process that is not a session leader cannot take one again.
// The harness's own session (Join) has none either; this keeps the
// operator's terminal (TIOCSTI, job control, reading it) out of the
// sandbox even for what runs there outside a harness's session.
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

// HarnessNice is the nice value Group.Lighten gives a harness's scheduling
// group: a weight of 15 against the daemon's 1,024 (nice 0). Each harness
// keeps an equal share against every other harness; against the daemon,
// which serves them all, and the host's other sessions, harnesses yield.
// Measured at 64 sandboxed sessions stepping at once (issue 28): 0.58 of
// the relay's rate with no lightening, 0.63 at nice 10, 0.79 at 19.
const HarnessNice = 19

// Group is the scheduling group (autogroup) of a session, held through
// its leader's /proc/PID/autogroup: opened once (OpenGroup), it reaches
// that process and no later holder of its pid (a write once the leader has
// died fails with ESRCH), so the daemon may lighten it at any later time.
// A Group is not safe for concurrent use.
type Group struct {
	f *os.File // nil once lightened or closed
}

// OpenGroup opens the scheduling group of the session pid leads. It
// refuses a pid in the caller's own session, whose group is the caller's.
// It needs the right to write /proc/PID/autogroup (the daemon as root; a
// daemon of the harness's own uid) and a kernel with autogroups; the error
// says why not.
func OpenGroup(pid int) (*Group, error) {
	theirs, err := unix.Getsid(pid)
	if err != nil {
		return nil, err
	}
	if mine, _ := unix.Getsid(0); theirs == mine {
		return nil, fmt.Errorf("pid %d is in this process's session %d: its scheduling group is this process's", pid, mine)
	}
	f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/autogroup", os.O_WRONLY, 0) // close-on-exec, as every os.File
	if err != nil {
		return nil, err
	}
	return &Group{f: f}, nil
}

// OpenPidfdGroup opens (OpenGroup) the group of the session led by the
// process pidfd refers to (a pidfd from another PID namespace: a
// sandbox's harness, sent by its init) and returns that process's pid in
// the caller's namespace. It fails when the process has ended, or ends
// before the group is open: its pid may be another's by then.
func OpenPidfdGroup(pidfd *os.File) (*Group, int, error) {
	pid, err := procfs.PidfdPid(int(pidfd.Fd()))
	if err != nil {
		return nil, 0, err
	}
	g, err := OpenGroup(pid)
	if err != nil {
		return nil, 0, err
	}
	// Open while the pidfd's process still holds pid: the group is its.
	if err := unix.PidfdSendSignal(int(pidfd.Fd()), 0, nil, 0); err != nil {
		g.Close()
		return nil, 0, fmt.Errorf("pid %d ended while its group was opened: %w", pid, err)
	}
	return g, pid, nil
}

// Lighten sets the group to HarnessNice, once, and closes it; later calls
// (and a nil Group) do nothing. Without CAP_SYS_ADMIN the kernel takes one
// such change per 100 ms machine-wide. A harness may set its own group
// back to nice 0, which only takes it back to an equal share.
func (g *Group) Lighten() error {
	if g == nil {
		return nil
	}
	if g.f == nil {
		return nil
	}
	_, err := g.f.WriteString(strconv.Itoa(HarnessNice))
	g.f.Close()
	g.f = nil
	return err
}

// Close lets the group go without lightening it. A nil Group does nothing.
func (g *Group) Close() error {
	if g == nil {
		return nil
	}
	if g.f == nil {
		return nil
	}
	err := g.f.Close()
	g.f = nil
	return err
}
