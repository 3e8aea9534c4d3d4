package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/capability"
	"github.com/harnessd/harnessd/internal/linux/landlock"
	"github.com/harnessd/harnessd/internal/linux/seccomp"
	"github.com/harnessd/harnessd/process/sandbox/internal/program"
)

// startHarness executes the run's harness and returns its pid and a pidfd
// of it (close-on-exec, the caller's to close). The init
// forks it (syscall.ForkExec, a vfork: no second start of this binary)
// from a thread of its own that first takes on what the kernel keeps per
// thread and a fork inherits: an empty bounding set and no inheritable or
// ambient capabilities, no_new_privs, the Landlock scope and the seccomp
// filter (restrictThread). The child then leads a session of its own
// (with the terminal on its stdin as its controlling terminal, for a TTY
// run), takes the harness's ids — losing what capabilities remained, and
// the execve gains none — enters its directory and executes the program
// with exactly the command's environment and the given stdio, nothing
// else. The thread is never unlocked, so the runtime ends it with its
// goroutine: no other goroutine runs on it, and no thread is cloned from
// it.
func startHarness(spec initSpec, cmd Command, stdio []*os.File) (pid, pidfd int, err error) {
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
	pidfd = -1
	attr := &syscall.ProcAttr{Dir: dir, Env: cmd.Env, Files: []uintptr{stdio[0].Fd(), stdio[1].Fd(), stdio[2].Fd()},
		Sys: &syscall.SysProcAttr{
			Setsid: true, Setctty: spec.TTY || cmd.TTY, Ctty: 0, PidFD: &pidfd,
			Credential: &syscall.Credential{Uid: uint32(spec.UID), Gid: uint32(spec.GID), NoSetGroups: !spec.SetGroups},
		}}
	type started struct {
		pid int
		err error
	}
	done := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		if err := restrictThread(spec); err != nil {
			done <- started{err: &SetupError{Stage: StageIdentity, Err: err}}
			return
		}
		pid, err := syscall.ForkExec(path, append([]string{cmd.Path}, cmd.Args...), attr)
		if err != nil { // the child's errno: its ids, its directory or the exec
			err = fmt.Errorf("%w (in %s as uid %d)", program.ExecError(cmd.Path, err), dir, spec.UID)
		}
		done <- started{pid, err}
	}()
	r := <-done
	if r.err != nil {
		return 0, -1, r.err
	}
	return r.pid, pidfd, nil
}

// notDir is err, or ENOTDIR for a file that is not a directory.
func notDir(err error) error {
	if err == nil {
		return syscall.ENOTDIR
	}
	return err
}

// restrictThread gives the calling (locked) thread what the harness
// inherits from it: no bounding, inheritable or ambient capabilities, no_new_privs, a
// Landlock scope for abstract Unix sockets (where the kernel has it) and,
// with spec.Seccomp, the seccomp filter. The thread keeps its effective
// and permitted sets, which the fork's child needs to take the harness's
// ids; an execve with the bounding, inheritable and ambient sets empty
// gains no capability, even as uid 0 (the single id map).
func restrictThread(spec initSpec) error {
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
