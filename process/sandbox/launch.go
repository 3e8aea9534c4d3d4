package sandbox

import (
	"context"
	"syscall"

	"github.com/harnessd/harnessd/internal/pathmap"
	"github.com/harnessd/harnessd/process"
)

// Launcher returns a process.Launcher that runs each launched leader as a
// Run of s:
// set it as process.Spec.Launcher, so package process keeps the pipes,
// readiness and Stop while the harness runs inside the sandbox. The
// command is the daemon's view (host paths, through which it writes the
// harness's files): every host path in its program, arguments, variables'
// values and directory below a bind's source becomes the bind's
// destination (Inside). The sandbox alone knows both views.
func (s *Sandbox) Launcher() process.Launcher { return launcher{s} }

type launcher struct{ s *Sandbox }

func (l launcher) Launch(ctx context.Context, c process.LaunchCommand) (process.LaunchedTree, error) {
	m := l.s.maps
	if m.Path(c.Path) == c.Path { // a program below a bind's source is found there
		if err := l.s.cfg.coveredByWorkspace(c.Path); err != nil {
			return nil, err
		}
	}
	r, err := l.s.run(ctx, Command{
		Path: m.Rewrite(c.Path), Args: m.Strings(c.Args), Env: m.Environ(c.Env), Dir: m.Rewrite(c.Dir), TTY: c.TTY,
		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr,
	})
	if err != nil {
		return nil, err
	}
	return tree{r}, nil
}

// Inside returns host path p as the sandbox's processes see it: below a
// bind's source, the same place below its destination (a source bound
// twice: its last bind, the workspace's WorkspaceAt); others unchanged.
func (s *Sandbox) Inside(p string) string { return s.maps.Path(p) }

func (c *Config) pathMaps() pathmap.Table {
	var dirs []pathmap.Dir
	for _, b := range c.allBinds() {
		dirs = append(dirs, pathmap.Dir{From: b.Src, To: b.dst()})
	}
	return pathmap.New(dirs)
}

// tree is one run seen as a process.LaunchedTree: its pid is the run's
// harness's on the host (the init's when that is not known: the kept
// init outlives the run, and an episode's, when the sandbox is handed on);
// signals go to the init (which forwards them to the run's harness group;
// SIGKILL ends the whole sandbox), and the tree is gone when the run has
// ended.
type tree struct{ r *Run }

func (t tree) Pid() int {
	if pid := t.r.host.Load(); pid != 0 {
		return int(pid)
	}
	return t.r.s.Pid()
}
func (t tree) Signal(sig syscall.Signal) error { return t.r.s.Signal(sig) }
func (t tree) Done() <-chan struct{}           { return t.r.Done() }
func (t tree) Settle()                         { t.r.Lighten() }
func (t tree) ExitStatus() process.ExitStatus {
	e, _ := t.r.Exit()
	return e.Status
}
