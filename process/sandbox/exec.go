package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/capability"
	"github.com/harnessd/harnessd/internal/linux/landlock"
	"github.com/harnessd/harnessd/internal/linux/seccomp"
	"github.com/harnessd/harnessd/internal/linux/session"
	"github.com/harnessd/harnessd/process/sandbox/internal/program"
)

// forker is the init's thread that forks every harness of the sandbox
// (syscall.ForkExec, a vfork: no second start of this binary). It first
// takes on what the kernel keeps per thread and a fork inherits: an empty
// bounding set and no inheritable or ambient capabilities, no_new_privs,
// the Landlock scope and the seccomp filter (restrictThread). Each child
// then leads a session of its own (with the terminal on its stdin as its
// controlling terminal, for a TTY run), takes the harness's ids — losing
// what capabilities remained, and the execve gains none — enters its
// directory and executes the program with exactly the command's
// environment and the given stdio, nothing else. The thread stays locked
// to its goroutine for the init's life: no other goroutine runs on it,
// the runtime clones no thread from it, and it never exits, which would
// send each harness it forked a parent-death signal the harness may have
// asked for.
type forker struct {
	forks chan fork
}

// fork is one harness to fork, and where its pid and pidfd go.
type fork struct {
	path string
	argv []string
	attr *syscall.ProcAttr
	done chan forked
}

type forked struct {
	pid, pidfd int
	err        error
}

// startForker starts the sandbox's forker thread.
func startForker(spec initSpec) *forker {
	f := &forker{forks: make(chan fork)}
	go func() {
		runtime.LockOSThread() // never unlocked: see forker
		restricted := restrictThread(spec)
		for fk := range f.forks {
			if restricted != nil {
				fk.done <- forked{pidfd: -1, err: &SetupError{Stage: StageIdentity, Err: restricted}}
				continue
			}
			pidfd := -1
			fk.attr.Sys.PidFD = &pidfd
			pid, err := syscall.ForkExec(fk.path, fk.argv, fk.attr)
			fk.done <- forked{pid, pidfd, err}
		}
	}()
	return f
}

// start executes the run's harness and returns its pid and a pidfd of it
// (close-on-exec, the caller's to close).
func (f *forker) start(spec initSpec, cmd Command, stdio []*os.File) (pid, pidfd int, err error) {
	path, err := program.Look(cmd.Path, cmd.Env)
	if err != nil {
		return 0, -1, err
	}
	dir := cmd.Dir
	if dir == "" {
		dir = spec.DefaultDir
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return 0, -1, fmt.Errorf("working directory %s: %w", dir, notDir(err))
	}
	attr := &syscall.ProcAttr{Dir: dir, Env: cmd.Env, Files: []uintptr{stdio[0].Fd(), stdio[1].Fd(), stdio[2].Fd()},
		Sys: &syscall.SysProcAttr{
			Setsid: true, Setctty: spec.TTY || cmd.TTY, Ctty: 0,
			Credential: &syscall.Credential{Uid: uint32(spec.UID), Gid: uint32(spec.GID), NoSetGroups: !spec.SetGroups},
		}}
	done := make(chan forked, 1)
	f.forks <- fork{path, append([]string{cmd.Path}, cmd.Args...), attr, done}
	r := <-done
	var se *SetupError
	switch {
	case errors.As(r.err, &se):
		return 0, -1, r.err
	case r.err != nil: // the child's errno: its ids, its directory or the exec
		return 0, -1, fmt.Errorf("%w (in %s as uid %d)", program.ExecError(cmd.Path, r.err), dir, spec.UID)
	}
	return r.pid, r.pidfd, nil
}

// notDir is err, or ENOTDIR for a file that is not a directory.
func notDir(err error) error {
	if err == nil {
		return syscall.ENOTDIR
	}
	return err
}

// restrictThread gives the calling (locked) thread what the harness
// inherits from it: SCHED_OTHER where the init runs as SCHED_BATCH, no
// bounding, inheritable or ambient capabilities, no_new_privs, a Landlock
// scope for abstract Unix sockets (where the kernel has it) and,
// with spec.Seccomp, the seccomp filter. The thread keeps its effective
// and permitted sets, which the fork's child needs to take the harness's
// ids; an execve with the bounding, inheritable and ambient sets empty
// gains no capability, even as uid 0 (the single id map).
func restrictThread(spec initSpec) error {
	// The init runs as SCHED_BATCH (the spawner's); the harness as any
	// process does (session.Normal).
	if err := session.Normal(); err != nil {
		return fmt.Errorf("scheduling policy: %w", err)
	}
	if err := capability.DropBounding(); err != nil {
		return err
	}
	if err := capability.ClearInheritable(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	// A sandbox on the host's network shares its abstract sockets (the
	// network namespace's): the harness reaches none but its own.
	if _, err := landlock.ScopeAbstractUnix(); err != nil {
		return err
	}
	if spec.Seccomp {
		return seccomp.Install()
	}
	return nil
}

// runProbeChild is the harness Probe runs: it succeeds when it is alone in
// its PID namespace with its init.
func runProbeChild() int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd sandbox probe:", err)
		return 1
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	if n != 2 {
		fmt.Fprintf(os.Stderr, "harnessd sandbox probe: pid %d sees %d processes\n", os.Getpid(), n)
		return 1
	}
	return 0
}
