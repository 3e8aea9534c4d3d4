package sandbox

import (
	"context"
	"syscall"

	"github.com/harnessd/harnessd/process"
)

// Launcher returns a process.Launcher that runs each launched leader as a
// Run of s:
// set it as process.Spec.Launcher, so package process keeps the pipes,
// readiness and Stop while the harness runs inside the sandbox. The
// command is the daemon's view: every host path in its program, arguments,
// environment values and directory that lies below a bind's source is
// rewritten to the bind's destination (Inside), so a harness is told the
// paths it can open, whatever host paths the daemon wrote its files by.
func (s *Sandbox) Launcher() process.Launcher { return launcher{s} }

type launcher struct{ s *Sandbox }

func (l launcher) Launch(ctx context.Context, c process.LaunchCommand) (process.LaunchedTree, error) {
	if insidePath(l.s.maps, c.Path) == c.Path {
		// A host program the workspace's mount point covers (one below a
		// bind's source, the workspace's own included, is found there).
		if err := l.s.cfg.coveredByWorkspace(c.Path); err != nil {
			return nil, err
		}
	}
	r, err := l.s.run(ctx, insideCommand(l.s.maps, Command{
		Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir, TTY: c.TTY,
		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr,
	}))
	if err != nil {
		return nil, err
	}
	return tree{r}, nil
}

// tree is one run seen as a process.LaunchedTree: signals go to the init
// (which forwards them to the run's harness group; SIGKILL ends the whole
// sandbox), and the tree is gone when the run has ended.
type tree struct{ r *Run }

func (t tree) Pid() int                        { return t.r.s.Pid() }
func (t tree) Signal(sig syscall.Signal) error { return t.r.s.Signal(sig) }
func (t tree) Done() <-chan struct{}           { return t.r.Done() }
func (t tree) ExitStatus() process.ExitStatus {
	e, _ := t.r.Exit()
	return e.Status
}
