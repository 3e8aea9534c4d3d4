package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/landlock"
	"github.com/harnessd/harnessd/internal/linux/seccomp"
	"github.com/harnessd/harnessd/internal/linux/session"
)

// runExec is the exec stage: a child of the init that becomes a process
// group of its own (session.Join), still root of the user namespace. It
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
	path, err := lookPath(es.Command.Path, es.Command.Env)
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
	argv := append([]string{es.Command.Path}, es.Command.Args...)
	err = syscall.Exec(path, argv, es.Command.Env)
	return execFail(f, StageExec, execError(es.Command.Path, err))
}

func execFail(f *net.UnixConn, stage string, err error) int {
	send(f, message{Type: msgError, Stage: stage, Error: err.Error()})
	return 127
}

func execError(prog string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("program %q not found in the sandbox: %w", prog, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("program %q not executable in the sandbox (permission denied): %w", prog, err)
	case errors.Is(err, syscall.ENOEXEC):
		return fmt.Errorf("program %q is not an executable format: %w", prog, err)
	}
	return fmt.Errorf("execute %q: %w", prog, err)
}

// lookPath finds prog in env's PATH (not the stage's own, which is empty).
func lookPath(prog string, env []string) (string, error) {
	if strings.Contains(prog, "/") {
		return prog, nil
	}
	pathVar := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, prog)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %q not found in the sandbox's PATH (%s): %w", prog, pathVar, syscall.ENOENT)
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
	last := lastCap()
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
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
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
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

func lastCap() int {
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return 63
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
