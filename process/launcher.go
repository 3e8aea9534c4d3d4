package process

import (
	"context"
	"os"
	"os/exec"
	"syscall"
)

// A Launcher starts a tree's leader somewhere other than as a plain child
// of the daemon: inside a sandbox whose init is the daemon's child (package
// process/sandbox provides one). Package process keeps everything else of
// the tree — pipes or terminal, line splitting, the stderr tail, readiness,
// Stop — so adapters work unchanged.
type Launcher interface {
	// Launch starts the leader described by c and returns its running
	// tree. It returns once the leader's program has been executed, or
	// with the reason it could not be.
	Launch(ctx context.Context, c LaunchCommand) (LaunchedTree, error)
}

// LaunchCommand is what a Launcher starts. Path, Args, Env and Dir are as
// in Spec (Path is resolved where the leader runs, not by the daemon);
// Stdin, Stdout and Stderr are the child ends of the tree's pipes (all
// three the terminal when TTY is set), which the Launcher must pass on and
// may close once Launch returns.
type LaunchCommand struct {
	Path                  string
	Args                  []string
	Env                   []string
	Dir                   string
	Stdin, Stdout, Stderr *os.File
	TTY                   bool
}

// LaunchedTree is a tree a Launcher started.
type LaunchedTree interface {
	// Pid is the host pid of the tree's leader (for a sandbox, the run's
	// harness; its init when the harness's is not known).
	Pid() int
	// Signal sends sig to the leader's process group; SIGKILL ends the
	// whole tree at once.
	Signal(sig syscall.Signal) error
	// Done is closed once no process of the tree is left.
	Done() <-chan struct{}
	// ExitStatus is the leader's exit status, valid once Done is closed.
	ExitStatus() ExitStatus
}

// A SettlingTree is a LaunchedTree that changes once its leader has
// started up: Process calls Settle once, before the first write to the
// leader's input (Write, WriteLine, or handing out Stdin), so the leader
// starts as launched and serves its turns settled. A sandbox's tree gives
// its harness a lower scheduling weight then (process/sandbox, Run.Lighten).
type SettlingTree interface {
	LaunchedTree
	Settle()
}

// StartCommand starts cmd as a tracked child of the daemon: the orphan
// reaper leaves its exit status to cmd.Wait. Call ReleaseCommand with its
// pid once cmd.Wait has returned. Packages that start long-lived children
// of their own (the sandbox spawner) use it.
func StartCommand(cmd *exec.Cmd) error {
	children.Lock()
	defer children.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	children.pids[cmd.Process.Pid] = struct{}{}
	return nil
}

// ReleaseCommand forgets a child started with StartCommand once it has
// been waited for.
func ReleaseCommand(pid int) { unregisterChild(pid) }
