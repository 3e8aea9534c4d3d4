package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/harnessd/harnessd/internal/linux/procfs"
	"github.com/harnessd/harnessd/process/internal/pipewrite"
)

// ErrInvalidSpec is wrapped by start errors for a Spec that can never be
// executed (a NUL byte in the program, an argument, the directory or the
// environment), found before anything is spawned.
var ErrInvalidSpec = errors.New("invalid process spec")

// validateSpec rejects what the kernel cannot carry: C strings end at NUL,
// so Go refuses such a string with a bare EINVAL.
func validateSpec(spec *Spec) error {
	bad := func(what string) error { return fmt.Errorf("%w: %s contains a NUL byte", ErrInvalidSpec, what) }
	if spec.Path == "" {
		return fmt.Errorf("%w: no program given", ErrInvalidSpec)
	}
	if strings.IndexByte(spec.Path, 0) >= 0 {
		return bad("the program path")
	}
	for i, a := range spec.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return bad(fmt.Sprintf("argument %d", i+1))
		}
	}
	if strings.IndexByte(spec.Dir, 0) >= 0 {
		return bad("the working directory")
	}
	for _, kv := range spec.Env {
		if strings.IndexByte(kv, 0) >= 0 {
			name, _, _ := strings.Cut(kv, "=")
			name, _, _ = strings.Cut(name, "\x00")
			return bad(fmt.Sprintf("environment variable %q", name))
		}
	}
	return nil
}

// spawnError names the cause of a failed spawn of path. The errno stays in
// the chain (errors.Is(err, syscall.EMFILE) holds).
func spawnError(path string, err error) error {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("program %q not found: %w", path, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("program %q not executable (permission denied): %w", path, err)
	case errors.Is(err, syscall.ENOEXEC):
		return fmt.Errorf("program %q is not an executable format: %w", path, err)
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("program %q: bad path: %w", path, err)
	case errors.Is(err, syscall.E2BIG):
		return fmt.Errorf("%q: arguments and environment too large: %w", path, err)
	case tooManyFiles(err):
		return fmt.Errorf("too many open files (daemon at its file descriptor limit) starting %q: %w", path, err)
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.ENOMEM):
		return fmt.Errorf("out of processes or memory starting %q: %w", path, err)
	case errors.Is(err, syscall.EINVAL):
		return fmt.Errorf("invalid argument starting %q: %w", path, err)
	}
	return fmt.Errorf("start %q: %w", path, err)
}

func tooManyFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// mayBeCgroup reports whether a spawn into a cgroup leaf may have failed
// because of CLONE_INTO_CGROUP (old kernel, seccomp, a busy or foreign
// cgroup) rather than because of the program or the daemon's limits: only
// then is a start without the cgroup worth an attempt.
func mayBeCgroup(err error) bool {
	for _, e := range []error{exec.ErrNotFound, syscall.ENOENT, syscall.EACCES, syscall.ENOEXEC, syscall.ENOTDIR,
		syscall.ELOOP, syscall.E2BIG, syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.EAGAIN, syscall.ETXTBSY} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

// childIO holds the child-side files of a start; the same files serve every
// attempt (os/exec does not close files it was handed).
type childIO struct {
	stdin, stdout, stderr *os.File
	pty                   bool
}

// newCmd builds a fresh exec.Cmd for one start attempt: os/exec refuses a
// second Start of the same Cmd.
func (p *Process) newCmd(path string, env []string, io childIO, cgroupFD int) *exec.Cmd {
	spec := &p.spec
	cmd := &exec.Cmd{Path: path, Args: append([]string{spec.Path}, spec.Args...), Dir: spec.Dir, Env: env}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if io.pty {
		attr.Setsid, attr.Setctty, attr.Ctty = true, true, 0
	} else {
		attr.Setpgid = true
	}
	if cgroupFD >= 0 {
		attr.UseCgroupFD, attr.CgroupFD = true, cgroupFD
	}
	cmd.SysProcAttr = attr
	cmd.Stdin, cmd.Stdout, cmd.Stderr = io.stdin, io.stdout, io.stderr
	return cmd
}

func (p *Process) start() (err error) {
	spec := &p.spec
	if err := validateSpec(spec); err != nil {
		return err
	}
	path := spec.Path
	if spec.Launcher == nil {
		if path, err = lookPath(spec.Path, spec.Env); err != nil {
			return spawnError(spec.Path, err)
		}
	}
	p.treeID = newTreeID()
	env := append(append([]string(nil), spec.Env...), TreeEnvVar+"="+p.treeID)

	// Parent-side files to close if anything fails; child-side ends always
	// close once the child has them.
	var parentFiles, childFiles []*os.File
	defer func() {
		for _, f := range childFiles {
			f.Close()
		}
		if err != nil {
			for _, f := range parentFiles {
				f.Close()
			}
		}
	}()
	fdErr := func(what string, err error) error {
		if tooManyFiles(err) {
			return fmt.Errorf("too many open files (daemon at its file descriptor limit): %s: %w", what, err)
		}
		return fmt.Errorf("%s: %w", what, err)
	}

	var io childIO
	if spec.PTY != nil {
		ptmx, tty, err := pty.Open()
		if err != nil {
			return fdErr("open pty", err)
		}
		parentFiles = append(parentFiles, ptmx)
		childFiles = append(childFiles, tty)
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: spec.PTY.Rows, Cols: spec.PTY.Cols}); err != nil {
			return fmt.Errorf("set pty size: %w", err)
		}
		io = childIO{stdin: tty, stdout: tty, stderr: tty, pty: true}
		p.ptmx = ptmx
	} else {
		var ends [3][2]*os.File // stdin, stdout, stderr: child end, parent end
		for i := range ends {
			r, w, err := os.Pipe()
			if err != nil {
				return fdErr("create pipe", err)
			}
			if i == 0 {
				ends[i] = [2]*os.File{r, w}
			} else {
				ends[i] = [2]*os.File{w, r}
			}
			childFiles = append(childFiles, ends[i][0])
			parentFiles = append(parentFiles, ends[i][1])
		}
		io = childIO{stdin: ends[0][0], stdout: ends[1][0], stderr: ends[2][0]}
		p.stdin, p.stdout, p.stderr = ends[0][1], ends[1][1], ends[2][1]
		p.fast = pipewrite.New(p.stdin)
	}

	if spec.Launcher != nil {
		return p.launch(env, io)
	}
	if p.sup.cg != nil {
		leaf, lerr := p.sup.cg.NewLeaf(spec.Name)
		switch {
		case lerr == nil:
			p.leaf = leaf
		case tooManyFiles(lerr):
			return fdErr("open cgroup", lerr)
		default:
			p.spec.Logger.Warn("no cgroup for process tree; using group kill", "name", spec.Name, "err", lerr)
		}
	}

	children.Lock()
	cgroupFD := -1
	if p.leaf != nil {
		cgroupFD = p.leaf.FD
	}
	cmd := p.newCmd(path, env, io, cgroupFD)
	err = cmd.Start()
	if err != nil && p.leaf != nil && mayBeCgroup(err) {
		// CLONE_INTO_CGROUP can be refused (old kernel, seccomp): run
		// without, from a fresh Cmd.
		p.spec.Logger.Warn("starting in cgroup failed; retrying without", "name", spec.Name, "err", err)
		p.leaf.Remove(time.Second)
		p.leaf = nil
		cmd = p.newCmd(path, env, io, -1)
		err = cmd.Start()
	}
	var w *childWaiter
	if err == nil {
		children.pids[cmd.Process.Pid] = struct{}{}
		w = watchChild(cmd.Process)
	}
	children.Unlock()
	if p.leaf != nil {
		p.leaf.CloseFD()
	}
	if err != nil {
		if p.leaf != nil {
			p.leaf.Remove(time.Second)
		}
		return spawnError(path, err)
	}
	p.pid = cmd.Process.Pid
	if st, ok := procfs.ReadStat(p.pid); ok {
		p.startTicks = st.StartTicks
	}
	p.launched.Store(true)
	p.log = spec.Logger.With("proc", spec.Name, "pid", p.pid)
	p.log.Debug("process started", "path", path, "args", spec.Args, "cgroup", p.leaf != nil, "pty", spec.PTY != nil)

	go p.waitExit(w)
	p.startReaders()
	return nil
}

// waitExit collects the leader's exit status from the reaper.
func (p *Process) waitExit(w *childWaiter) {
	ws, err := w.wait()
	unregisterChild(p.pid)
	if err != nil {
		p.log.Error("waiting for process failed", "err", err)
		p.exit = ExitStatus{Code: -1, Signal: "unknown"}
	} else {
		p.exit = exitFromWaitStatus(ws)
	}
	p.log.Debug("process exited", "status", p.exit.String())
	close(p.exited)
}

// launch starts the leader through Spec.Launcher with the child-side files
// of io.
func (p *Process) launch(env []string, io childIO) error {
	spec := &p.spec
	ctx, cancel := context.WithTimeout(context.Background(), launchTimeout)
	defer cancel()
	tree, err := spec.Launcher.Launch(ctx, LaunchCommand{
		Path: spec.Path, Args: spec.Args, Env: env, Dir: spec.Dir,
		Stdin: io.stdin, Stdout: io.stdout, Stderr: io.stderr, TTY: io.pty,
	})
	if err != nil {
		return fmt.Errorf("start %s: %w", spec.Path, err)
	}
	p.tree = tree
	p.settler, _ = tree.(SettlingTree) // resolved once, not at each write
	p.pid = tree.Pid()
	p.launched.Store(true)
	p.log = spec.Logger.With("proc", spec.Name, "pid", p.pid)
	p.log.Debug("process launched", "path", spec.Path, "args", spec.Args, "pty", spec.PTY != nil)
	go func() {
		<-tree.Done()
		p.exit = tree.ExitStatus()
		p.log.Debug("process exited", "status", p.exit.String())
		close(p.exited)
	}()
	p.startReaders()
	return nil
}

// launchTimeout bounds a Launcher's start of the leader (the sandbox's
// init forking the harness), not the harness's readiness.
const launchTimeout = 30 * time.Second
