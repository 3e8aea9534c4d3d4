package episode

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// Door names of an episode's sandbox.
const (
	doorMCP    = "mcp"
	doorModel  = "model"
	doorEgress = "egress"
)

// sandboxHostname is the harness's hostname inside.
const sandboxHostname = "harnessd"

// In sandbox isolation every episode's directory is at SandboxDir inside
// its sandbox, whatever its host path (which names the session and the
// episode): its workspace at SandboxWorkspace (and at workspace.mount_at
// or the task's WORKDIR when set), its HOME at SandboxHome, its TMPDIR at
// SandboxTmp. So every episode's harness sees the same paths — an agent
// that prints its working directory or HOME into its prompt sends the
// same prompt in every session, which a fork's shared token prefix needs.
// The daemon writes the files through the host paths; the sandbox's
// launcher translates every host path it is given into these (see
// sandbox.Sandbox.Inside). /run is covered by an empty tmpfs in every
// sandbox, so nothing of the host's is hidden by the binds.
const (
	SandboxDir       = "/run/harnessd"
	SandboxWorkspace = SandboxDir + "/workspace"
	SandboxHome      = SandboxDir + "/home"
	SandboxTmp       = SandboxDir + "/tmp"
)

// openSandbox gives the episode its sandbox (sandbox isolation only): its
// doors carry the bridge, the model gateway and the egress proxy, and the
// harness is launched into it.
func (ep *Episode) openSandbox(ctx context.Context) error {
	if !ep.env.Sandboxed() {
		return nil
	}
	cfg, err := ep.env.sandboxConfig(ep.dirs, ep.Task())
	if err != nil {
		return err
	}
	sb := ep.slot.takeSandbox(cfg, ep.Log()) // one an earlier episode of the disk's handed on
	if sb == nil {
		if sb, err = ep.env.startSandbox(ctx, cfg); err != nil {
			return err
		}
	}
	ep.sandbox = sb
	ep.undo.push(ResourceSandbox, func(context.Context) error {
		ep.mounts.close() // before the sandbox goes: nothing of the daemon's holds its mounts
		if ep.env.reusesSandboxes() && !ep.undo.anyFailed() && ep.slot.keepSandbox(sb, cfg) {
			return nil // recycled when the disk is given back (disks.put)
		}
		err := sb.Close()
		if err != nil {
			ep.Log().Warn("sandbox not fully released", "err", err)
		}
		return err
	})
	return ep.startSidesAhead(ctx)
}

// mountAt is where the harness's workspace is mounted and its working
// directory inside: the task's WORKDIR, else workspace.mount_at ("" for
// the workspace's own path).
func (e *Env) mountAt(t *tasks.Task) string {
	if t != nil && t.WorkDir != "" {
		return t.WorkDir
	}
	return e.Config.Workspace.MountAt
}

// mayServeTools reports whether an episode of the session may have tools
// to serve (openTools), so that its sandbox needs the bridge's door: a
// tool server configured (for the session or per episode, the built-in
// sources included) or a taskset, whose tasks may name their own. Without
// either the door would be opened by the sandbox's init, at its start and
// at every recycle, only for openTools to close it; with no door at all a
// connection to the port is refused as it is to a closed one.
func (e *Env) mayServeTools() bool {
	return len(e.Sources) > 0 || len(e.perEpisode) > 0 || e.Config.Taskset() != nil
}

// startSandbox starts a sandbox of cfg for an episode.
func (e *Env) startSandbox(ctx context.Context, cfg sandbox.Config) (*sandbox.Sandbox, error) {
	sb, err := sandbox.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start the episode's sandbox (isolation: sandbox): %w", err)
	}
	return sb, nil
}

// sandboxConfig describes the sandbox of an episode with directories dirs
// and task t (nil for none, or for a prepared episode whose task is not
// known), preparing what it binds from dirs.
func (e *Env) sandboxConfig(dirs Dirs, t *tasks.Task) (sandbox.Config, error) {
	s := e
	var doors []sandbox.Door
	if e.mayServeTools() {
		doors = append(doors, sandbox.Door{Name: doorMCP})
	}
	if s.Config.Harness.Model.Enabled() {
		doors = append(doors, sandbox.Door{Name: doorModel})
	}
	if s.Config.Network.EgressPolicy() == config.EgressAllow {
		doors = append(doors, sandbox.Door{Name: doorEgress})
	}
	// The episode's directory is bound read-only at SandboxDir with the
	// workspace, HOME and TMPDIR inside it bound on top: its mode lets the
	// sandbox's init (not the daemon's uid) reach their mount points;
	// listing it is not needed.
	if err := os.Chmod(dirs.Root, 0o711); err != nil {
		return sandbox.Config{}, fmt.Errorf("prepare the episode directory for its sandbox: %w", err)
	}
	exposed, hideMore, err := s.view().Binds()
	if err != nil {
		return sandbox.Config{}, err
	}
	binds := append([]sandbox.Bind{{Src: dirs.Root, Dst: SandboxDir}, {Src: dirs.Tmp, Dst: SandboxTmp, Writable: true}}, exposed...)
	l := s.Config.Limits
	limits := sandbox.Limits{MemoryBytes: int64(l.Memory), Pids: l.Pids, CPU: l.CPU}
	if set := s.Config.Taskset(); set != nil {
		// Tests and solutions are never visible; tasks expect /logs.
		hideMore = append(hideMore, set.HiddenPaths()...)
		logs := filepath.Join(dirs.Root, "logs")
		if err := os.MkdirAll(filepath.Join(logs, "agent"), 0o755); err != nil {
			return sandbox.Config{}, fmt.Errorf("prepare /logs for the task: %w", err)
		}
		binds = append(binds, sandbox.Bind{Src: logs, Dst: "/logs", Writable: true})
		if t != nil {
			if m := t.Limits.MemoryBytes(); m > 0 {
				limits.MemoryBytes = m
			}
			if c := t.Limits.CPUs; c > 0 {
				limits.CPU = c
			}
		}
	}
	cfg := sandbox.Config{
		Init:         s.SandboxInit,
		Name:         "episode",
		Hostname:     sandboxHostname,
		Workspace:    dirs.Workspace,
		WorkspaceDst: SandboxWorkspace,
		Home:         dirs.Home,
		HomeDst:      SandboxHome,
		WorkspaceAt:  s.mountAt(t),
		Hide:         append(s.view().HiddenPaths(), hideMore...),
		// The episode's directory (the MCP config) read-only, its TMPDIR
		// writable; the workspace and HOME are bound by the sandbox.
		Binds:       binds,
		Doors:       doors,
		Seccomp:     true,
		Limits:      limits,
		HostNetwork: s.Config.Network.EgressPolicy() == config.EgressHost,
	}
	if t != nil {
		// The task's [agent] user: its id inside, named in the sandbox's
		// /etc/passwd and /etc/group.
		uid, ids, err := t.AgentIdentity(filepath.Join(dirs.Root, "etc"))
		if err != nil {
			return sandbox.Config{}, err
		}
		if uid != nil {
			cfg.UID, cfg.GID = uid, uid
			cfg.Binds = append(cfg.Binds, ids...)
		}
	}
	return cfg, nil
}

// door returns the episode's door listener of name, nil outside a sandbox.
func (ep *Episode) door(name string) net.Listener {
	if ep.sandbox == nil {
		return nil
	}
	if l := ep.sandbox.Door(name); l != nil {
		return l
	}
	return nil
}

// giveToHarness hands the episode's directory (the MCP config, TMPDIR,
// what the adapter wrote there) to the sandbox's harness identity. The
// workspace and HOME are the sandbox's own to hand over (sandbox.Run), so
// they are not walked twice.
func (ep *Episode) giveToHarness() error {
	if ep.sandbox == nil {
		return nil
	}
	// The directory itself stays the daemon's (mode 0711, read-only
	// inside); its entries become the harness's.
	ents, err := os.ReadDir(ep.dirs.Root)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(ep.dirs.Root, e.Name())
		if p == ep.dirs.Workspace || p == ep.dirs.Home {
			continue
		}
		if err := ep.sandbox.Chown(p); err != nil {
			return err
		}
	}
	return nil
}

// LimitFailure names the limit the sandboxed tree ran into in its latest
// run (nil when none or outside a sandbox).
func (ep *Episode) LimitFailure() *harness.Failure {
	if ep == nil || ep.sandbox == nil {
		return nil
	}
	s := ep.env
	e, ok := ep.sandbox.LastExit()
	if !ok || e.Limit == "" {
		return nil
	}
	knob := "limits." + e.Limit
	return harness.Fail(wire.FailureResourceLimit, "the harness's process tree hit its %s limit (%s, now %s)", e.Limit, knob, s.limitValue(e.Limit))
}

func (s *Env) limitValue(name string) string {
	l := s.Config.Limits
	switch name {
	case sandbox.LimitMemory:
		return l.Memory.String()
	case sandbox.LimitPids:
		return fmt.Sprint(l.Pids)
	}
	return "?"
}
