package sandbox

import (
	"fmt"
	"net"
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

// runExec is the exec stage: a child of the init that becomes the leader
// of a session of its own (session.Join), still root of the user namespace. It
// gives itself the harness's identity and executes the harness, or writes
// why it could not to the init.
func runExec() int {
	// Capabilities, no_new_privs and seccomp are per thread: all of it is
	// done on this thread, which then executes the harness.
	runtime.LockOSThread()
	unix.CloseOnExec(controlFD)
	f, err := controlConn(os.NewFile(controlFD, "exec-stage"))
	if err != nil {
		return 126
	}
	m, files, err := receive(f)
	if err != nil || m.Type != msgExec || m.Exec == nil || len(files) != 3 {
		closeAll(files)
		return execFail(f, StageExec, fmt.Errorf("no command from the init (%v)", err))
	}
	es := *m.Exec
	for i, file := range files {
		if err := unix.Dup3(int(file.Fd()), i, 0); err != nil {
			return execFail(f, StageExec, fmt.Errorf("stdio: %w", err))
		}
		file.Close()
	}
	if err := session.Join(es.Spec.TTY || es.Command.TTY); err != nil {
		return execFail(f, StageExec, err)
	}
	path, err := program.Look(es.Command.Path, es.Command.Env)
	if err != nil {
		return execFail(f, StageExec, err)
	}
	dir := es.Command.Dir
	if dir == "" {
		dir = es.Spec.DefaultDir
	}
	if err := os.Chdir(dir); err != nil {
		return execFail(f, StageExec, fmt.Errorf("working directory %s: %w", dir, err))
	}
	if err := becomeHarness(es.Spec); err != nil {
		return execFail(f, StageIdentity, err)
	}
	// The harness gets its stdio and nothing else: descriptors the
	// daemon itself inherited without close-on-exec (from its parent: a
	// shell's, a terminal) would otherwise pass through the init to it.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return execFail(f, StageExec, fmt.Errorf("close the stage's other descriptors on exec: %w", err))
	}
	argv := append([]string{es.Command.Path}, es.Command.Args...)
	err = syscall.Exec(path, argv, es.Command.Env)
	return execFail(f, StageExec, program.ExecError(es.Command.Path, err))
}

func execFail(f *net.UnixConn, stage string, err error) int {
	send(f, message{Type: msgError, Stage: stage, Error: err.Error()})
	return 127
}

// becomeHarness sets rlimits, clears the bounding set, takes the
// harness's ids (which drops the remaining capabilities), sets
// no_new_privs, scopes abstract Unix sockets (Landlock, where the kernel
// has it) and installs the seccomp filter.
func becomeHarness(s initSpec) error {
	core := false
	for _, r := range s.Rlimits {
		if r.Resource == unix.RLIMIT_CORE {
			core = true
		}
		if err := syscall.Setrlimit(r.Resource, &syscall.Rlimit{Cur: r.Soft, Max: r.Hard}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", r.Resource, err)
		}
	}
	if !core {
		if err := syscall.Setrlimit(unix.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
			return fmt.Errorf("setrlimit core: %w", err)
		}
	}
	if err := capability.DropBounding(); err != nil {
		return err
	}
	if s.SetGroups {
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
	}
	if err := syscall.Setresgid(s.GID, s.GID, s.GID); err != nil {
		return fmt.Errorf("setresgid %d: %w", s.GID, err)
	}
	if err := syscall.Setresuid(s.UID, s.UID, s.UID); err != nil {
		return fmt.Errorf("setresuid %d: %w", s.UID, err)
	}
	// With uid 0 inside (the single id map) the permitted set survives
	// setresuid: empty every set of this thread. Execve of a root process
	// then gets only what the (now empty) bounding set allows.
	if err := capability.ClearAll(); err != nil {
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
	if s.Seccomp {
		if err := seccomp.Install(); err != nil {
			return err
		}
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
