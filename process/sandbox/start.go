package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/procfs"
	"github.com/harnessd/harnessd/process/sandbox/initfile"
	"github.com/harnessd/harnessd/process/sandbox/internal/control"
	"github.com/harnessd/harnessd/process/sandbox/internal/spawner"
)

// starter carries a sandbox through Start's phases. Each phase acquires
// one kind of resource and returns its undo; Start runs the phases in
// order and, when one fails, the undos of those that succeeded in reverse
// (as runc's libcontainer unwinds a container's creation), so that a
// failed Start leaves nothing behind and no phase cleans up another's.
type starter struct {
	cfg       Config
	ids       idPlan
	cg        *cgroupSet
	spec      initSpec
	bindFiles []*os.File // detached mounts (open_tree) for the init to attach
	ctl       *net.UnixConn
	s         *Sandbox
}

// startPhase is one named step of Start.
type startPhase struct {
	name string
	run  func(ctx context.Context) (undo func(), err error)
}

func (st *starter) phases() []startPhase {
	return []startPhase{
		{"ids", st.planIDs},
		{"cgroup", st.makeCgroup},
		{"binds", st.openBinds},
		{"spawn", st.spawn},
		{"handshake", st.handshake},
	}
}

// Start creates the namespaces, runs the init and waits until it has set
// the sandbox up and opened the doors. The harness starts with Run.
func Start(ctx context.Context, cfg Config) (*Sandbox, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = "sandbox"
	}
	st := &starter{cfg: cfg}
	var undos []func()
	for _, ph := range st.phases() {
		undo, err := ph.run(ctx)
		if err != nil {
			for i := len(undos) - 1; i >= 0; i-- {
				undos[i]()
			}
			return nil, err
		}
		if undo != nil {
			undos = append(undos, undo)
		}
	}
	go st.s.watch()
	return st.s, nil
}

// planIDs picks the id maps (a private host range as root) and gives the
// workspace and HOME to the harness's host ids. Undo: the range is free
// again.
func (st *starter) planIDs(context.Context) (func(), error) {
	ids, err := planIDs(&st.cfg)
	if err != nil {
		return nil, err
	}
	st.ids = ids
	if ids.mode == IDRange {
		for _, d := range []string{st.cfg.Workspace, st.cfg.Home} {
			if d != "" {
				if err := chownTree(d, int(ids.hostBase)+ids.uid, int(ids.hostBase)+ids.gid); err != nil {
					ids.release()
					return nil, err
				}
			}
		}
	}
	return ids.release, nil
}

// makeCgroup makes the cgroup for the limits, if any, and writes them.
// Undo: the (still empty) cgroup is removed.
func (st *starter) makeCgroup(context.Context) (func(), error) {
	if !st.cfg.Limits.any() {
		return nil, nil
	}
	name := fmt.Sprintf("%s%d-%s-%s", cgroupPrefix, os.Getpid(), sanitize(st.cfg.Name), randomID())
	cg, err := newCgroupSet(name, st.cfg.CgroupParent, st.cfg.Limits)
	if err != nil {
		return nil, err
	}
	if err := cg.apply(st.cfg.Limits); err != nil {
		cg.remove()
		return nil, err
	}
	st.cg = cg
	return func() { cg.remove() }, nil
}

// openBinds writes the init's spec and, as root, clones each bind's source
// into a detached mount (open_tree) that the init attaches (move_mount):
// the init, root of its user namespace only, could not walk the daemon's
// private directories, nor bind from a mount outside its namespace. Not as
// root, the init has the daemon's uid and binds by path. Undo: the
// detached mounts are closed (spawn closes them too, once the init has
// its copies).
func (st *starter) openBinds(context.Context) (func(), error) {
	st.spec = st.cfg.initSpec(st.ids)
	undo := func() { control.CloseAll(st.bindFiles); st.bindFiles = nil }
	for _, b := range st.cfg.binds() {
		bs := bindSpec{Bind: b}
		if st.ids.mode == IDRange {
			fd, err := unix.OpenTree(unix.AT_FDCWD, b.Src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
			if err != nil {
				undo()
				return nil, fmt.Errorf("bind %s into the sandbox: open_tree: %w", b.Src, err)
			}
			st.bindFiles = append(st.bindFiles, os.NewFile(uintptr(fd), b.Src))
			bs.FD = controlFD + len(st.bindFiles)
		}
		st.spec.Mounts.Binds = append(st.spec.Mounts.Binds, bs)
	}
	return undo, nil
}

// spawn starts the init in the new namespaces with the control socket and
// the detached mounts (through the spawner), and puts it in the cgroup
// before it forks anything. Undo: the init is killed and waited for, the
// control socket closed.
func (st *starter) spawn(context.Context) (func(), error) {
	hostEnd, childEnd, err := control.Pair()
	if err != nil {
		return nil, err
	}
	ctl, err := control.Conn(hostEnd)
	if err != nil {
		childEnd.Close()
		return nil, err
	}
	path, spec := st.initSpawn()
	files, closeStdio, err := st.initStdio()
	if err == nil {
		var init *spawner.Init
		init, err = spawner.Start(path, spec, append(append(files, childEnd), st.bindFiles...))
		closeStdio()
		if err == nil {
			st.s = &Sandbox{
				cfg: st.cfg, ids: st.ids, init: init, ctl: ctl, cg: st.cg, maps: st.cfg.pathMaps(),
				initPid: init.Pid, pidNS: procfs.PIDNamespace(init.Pid), done: make(chan struct{}),
			}
		}
	}
	childEnd.Close()
	control.CloseAll(st.bindFiles) // the init has its own copies now
	st.bindFiles = nil
	if err != nil {
		ctl.Close()
		return nil, cloneError(err)
	}
	st.ctl = ctl
	init := st.s.init
	undo := func() {
		init.Kill()
		init.Wait()
		ctl.Close()
	}
	if st.cg != nil {
		if err := st.cg.add(init.Pid); err != nil {
			undo()
			return nil, err
		}
	}
	return undo, nil
}

// initSpawn is the init's program and how the spawner starts it: this
// binary (or Config.Init) with the hidden subcommand, in every namespace
// of Cloneflags (the network's kept with HostNetwork), with the id maps,
// and Pdeathsig so that it dies with the spawner (which dies with the
// daemon).
func (st *starter) initSpawn() (string, spawner.Spec) {
	path := st.cfg.Init
	if path == "" {
		path = initfile.Path()
	}
	uids, gids := st.ids.maps()
	flags := uintptr(Cloneflags)
	if st.cfg.HostNetwork {
		flags &^= syscall.CLONE_NEWNET
	}
	return path, spawner.Spec{
		Path: path, Args: []string{"harnessd-sandbox-init", initCommand}, Cloneflags: flags,
		UIDMaps: uids, GIDMaps: gids, Setgroups: st.ids.mode == IDRange,
		// The daemon's host uid is not in a range's map: the init
		// becomes inside 0 (the range's first host id) explicitly.
		Root: st.ids.mode == IDRange,
	}
}

// initStdio is the init's stdio: Config's files, /dev/null for those it
// leaves nil. close closes what initStdio opened.
func (st *starter) initStdio() (files []*os.File, close func(), err error) {
	var opened []*os.File
	close = func() { control.CloseAll(opened) }
	for _, f := range []*os.File{st.cfg.Stdin, st.cfg.Stdout, st.cfg.Stderr} {
		if f == nil {
			if f, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
				close()
				return nil, func() {}, err
			}
			opened = append(opened, f)
		}
		files = append(files, f)
	}
	return files, close, nil
}

// handshake sends the init its spec and waits for its ready message with
// the doors (or its error). Undo: the doors are closed.
func (st *starter) handshake(ctx context.Context) (func(), error) {
	s := st.s
	closeDoors := s.closeDoors
	if err := s.send(message{Type: msgSpec, Spec: &st.spec}); err != nil {
		return nil, err
	}
	if err := s.awaitReady(ctx); err != nil {
		closeDoors()
		return nil, err
	}
	return closeDoors, nil
}

// StopSpawners ends the process that starts this daemon's inits (and any
// init it still has) and waits for it. Call it as the daemon exits, once
// its sandboxes are closed: the spawner and its inits are then reaped, and
// their CPU time is the daemon's. A later Start starts a spawner again.
func StopSpawners() { spawner.Stop() }
