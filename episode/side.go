package episode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode/exposure"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/tasks"
)

// Side sandboxes: every process harnessd starts on an episode's data — a
// command rubric, a tool server (the environment's or the task's) — runs
// in a sandbox of its own with the harness's restrictions or stricter: its
// own namespaces, a non-root uid (the harness's own ids when the episode
// has a sandbox, so files stay shared; a private range otherwise), no
// capabilities, no_new_privs, the seccomp filter, a cgroup with the
// harness's limits (tasks.DefaultLimits where none are set), no network
// unless the tool entry declares it, the daemon's directories hidden, and
// the workspace at the path the harness sees (read-only for a rubric).
// Graders run in tasks.Task.Grade's own sandbox.

// sideSpec describes one side sandbox.
type sideSpec struct {
	name    string
	command []string // what runs there (its program is made reachable)
	dirs    []string // further host directories it needs to see
	// workspace binds the episode's workspace (nil episode: none);
	// writable says read-write.
	workspace bool
	writable  bool
	// network keeps the host's network namespace (a tool entry's
	// network: true).
	network bool
}

// sideLimits are the side sandboxes' cgroup bounds: the environment's
// limits, DefaultLimits' where it sets none.
func (e *Env) sideLimits(t *tasks.Task) sandbox.Limits {
	l := e.Config.Limits
	out := sandbox.Limits{MemoryBytes: int64(l.Memory), Pids: l.Pids, CPU: l.CPU}
	if t != nil {
		if m := t.Limits.MemoryBytes(); m > 0 {
			out.MemoryBytes = m
		}
		if c := t.Limits.CPUs; c > 0 {
			out.CPU = c
		}
	}
	if out.MemoryBytes == 0 {
		out.MemoryBytes = tasks.DefaultLimits.MemoryBytes
	}
	if out.Pids == 0 {
		out.Pids = tasks.DefaultLimits.Pids
	}
	return out
}

// workspaceInside is where the harness sees the episode's workspace (and
// side sandboxes show it): its mount_at (or the task's WORKDIR), else
// SandboxWorkspace in sandbox isolation and the host path in process
// isolation.
func (ep *Episode) workspaceInside() string {
	if at := ep.env.mountAt(ep.Task()); at != "" {
		return at
	}
	if ep.env.Sandboxed() {
		return SandboxWorkspace
	}
	return ep.dirs.Workspace
}

// sideConfig builds the sandbox configuration of sp for ep (nil: a
// session-wide process, which sees no workspace).
func (e *Env) sideConfig(ep *Episode, sp sideSpec) sandbox.Config {
	binds, hides := e.view().ForCommand(sp.command)
	binds = append(binds, e.sideDirs(sp.dirs)...)
	cfg := sandbox.Config{
		Init: e.SandboxInit, Name: sp.name, Hostname: sandboxHostname,
		Seccomp: true, HostNetwork: sp.network,
	}
	var t *tasks.Task
	if ep != nil {
		t = ep.Task()
		if sp.workspace {
			binds = append(binds, sandbox.Bind{Src: ep.dirs.Workspace, Dst: ep.workspaceInside(), Writable: sp.writable})
		}
		if ep.sandbox != nil {
			// The harness's own ids: its files are the side process's,
			// and nothing more is (the mount decides what is writable).
			if base, ok := ep.sandbox.IDBase(); ok {
				cfg.IDs, cfg.IDBase = sandbox.IDRange, base
			}
		}
	}
	if set := e.Config.Taskset(); set != nil {
		hides = append(hides, set.HiddenPaths()...)
	}
	cfg.Hide = append(e.view().HiddenPaths(), hides...)
	cfg.Binds = binds
	cfg.Limits = e.sideLimits(t)
	return cfg
}

// sideDirs binds each directory a side process works in (a tool server's
// dir: by default the configuration's) read-only at its own path, with
// every hidden path inside it (the configuration and token files, the
// workspace root, the record directory) covered again by an empty file or
// directory: binds come after the hiding, so a bind alone would show them.
// A directory that is, or lies in, a hidden path, or /, is not bound; a
// directory named through a link is judged, bound and covered as the
// directory the link names (a bind follows the link: judged by the name,
// a link to a hidden directory showed it). The side process runs as none
// of the daemon's ids: a directory it may not search stays out of its
// reach however it is mounted.
func (e *Env) sideDirs(dirs []string) []sandbox.Bind {
	var hidden []string
	add := func(ps []string) {
		for _, h := range ps {
			hidden = append(hidden, filepath.Clean(h))
			if real, err := filepath.EvalSymlinks(h); err == nil && real != filepath.Clean(h) {
				hidden = append(hidden, real)
			}
		}
	}
	add(e.view().HiddenPaths())
	if set := e.Config.Taskset(); set != nil {
		add(set.HiddenPaths())
	}
	var out []sandbox.Bind
	for _, d := range dirs {
		d, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || d == "/" || slices.ContainsFunc(hidden, func(h string) bool { return exposure.Within(d, h) }) {
			continue
		}
		out = append(out, sandbox.Bind{Src: d})
		for _, h := range hidden {
			if h == d || !exposure.Within(h, d) {
				continue
			}
			fi, err := os.Lstat(h)
			if err != nil {
				continue
			}
			empty, err := e.emptyPath(fi.IsDir())
			if err != nil {
				e.Logger.Warn("a hidden path inside a tool server's directory cannot be covered; the directory is not bound", "dir", d, "err", err)
				out = out[:len(out)-1]
				break
			}
			out = append(out, sandbox.Bind{Src: empty, Dst: h})
		}
	}
	return out
}

// emptyPath returns an empty read-only file (or directory) of the
// session's, to bind over a path a side sandbox must not see.
func (e *Env) emptyPath(dir bool) (string, error) {
	if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return "", err
	}
	if dir {
		p := filepath.Join(e.Dir, ".empty-dir")
		if err := os.Mkdir(p, 0o555); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		return p, nil
	}
	p := filepath.Join(e.Dir, ".empty-file")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o444)
	if err != nil {
		return "", err
	}
	return p, f.Close()
}

// sideLauncher is a process.Launcher into a side sandbox, started at the
// first launch (and again after the sandbox ended: a tool server's
// restart), closed with Close.
type sideLauncher struct {
	e  *Env
	ep *Episode
	sp sideSpec
	mu sync.Mutex
	sb *sandbox.Sandbox
}

// Launch implements process.Launcher.
func (l *sideLauncher) Launch(ctx context.Context, c process.LaunchCommand) (process.LaunchedTree, error) {
	sb, err := l.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	return sb.Launcher().Launch(ctx, c)
}

func (l *sideLauncher) sandbox(ctx context.Context) (*sandbox.Sandbox, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sb != nil {
		select {
		case <-l.sb.Done():
			l.sb.Close()
			l.sb = nil
		default:
			return l.sb, nil
		}
	}
	sb, err := sandbox.Start(ctx, l.e.sideConfig(l.ep, l.sp))
	if err != nil {
		return nil, fmt.Errorf("start the sandbox of %s: %w", l.sp.name, err)
	}
	if l.sp.workspace && l.ep != nil && l.ep.sandbox == nil {
		// A private id range (no episode sandbox; the harness runs as the
		// daemon's uid): the workspace (mode 0700) becomes the side
		// process's to enter, read and, if bound so, write. Grading does
		// the same.
		if err := sb.Chown(l.ep.dirs.Workspace); err != nil {
			sb.Close()
			return nil, err
		}
	}
	l.sb = sb
	return sb, nil
}

// Close ends the sandbox, if one was started.
func (l *sideLauncher) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sb == nil {
		return nil
	}
	err := l.sb.Close()
	l.sb = nil
	return err
}

// RubricSandbox starts the sandbox a command rubric of the episode runs
// in: the workspace read-only at the path the harness sees, a non-root
// uid, no network (see the package's side sandboxes).
func (ep *Episode) RubricSandbox(ctx context.Context, command []string) (*rubric.Sandbox, error) {
	l := &sideLauncher{e: ep.env, ep: ep, sp: sideSpec{name: "rubric", command: command, workspace: true}}
	if _, err := l.sandbox(ctx); err != nil {
		return nil, err
	}
	return &rubric.Sandbox{Launcher: l, Workspace: ep.workspaceInside(), Close: l.Close}, nil
}

// toolIsolatedOnHost reports a tool entry that runs on the host: one that
// says isolation: host, or any outside sandbox isolation (where the
// harness itself runs on the host).
func (e *Env) toolOnHost(tc config.ToolConfig) bool {
	return tc.Isolation == config.ToolIsolationHost || !e.Sandboxed()
}
