// Package cgtree owns a daemon's cgroup v2 directory for process trees:
// harnessd-<pid>-<random> below the daemon's own cgroup (or a given root),
// flocked for as long as the daemon lives, with one leaf per process tree
// (cgroup.kill ends every process in it, however it forked or detached),
// the sweep at start of the directories of daemons that are gone, and
// Membership (is a cgroup id one of ours: a leaf, below one, a daemon's). It
// acts only on directories a daemon made (their names say so); reading
// and writing cgroup files is internal/linux/cgroups'. Package process
// starts trees in the leaves and decides when to kill them; this package
// must not start or wait for processes.
package cgtree

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/cgroups"
)

// Manager owns a cgroup v2 directory for this daemon, with one leaf per
// process tree. Killing a leaf (cgroup.kill) ends every process in it, however
// it forked or detached.
type Manager struct {
	parent string
	lockMu sync.Mutex // guards lockFD: Close may run concurrently
	lockFD int        // flock on parent: says this daemon is alive (see leftover); -1 when none
	seq    atomic.Uint64
	// ids holds the cgroup v2 ids (directory inode numbers) of the live
	// leaves, which the peer check compares a socket's cgroup id with.
	idsMu sync.RWMutex
	ids   map[uint64]struct{}
}

// Leaf is one process tree's cgroup.
type Leaf struct {
	// Path is the leaf's directory.
	Path string
	// FD is an O_PATH directory fd for CLONE_INTO_CGROUP; -1 once closed.
	FD int
	// ID is the cgroup v2 id: the directory's inode number; 0 when unknown.
	ID    uint64
	owner *Manager // nil for leaves found by a sweep
}

// defaultCgroupRoot returns the cgroup v2 mount point, this process's own
// cgroup path, and the directory of that cgroup (under which a supervisor
// makes its own).
func DefaultRoot() (mount, own, dir string, err error) {
	mp, own, dir, err := cgroups.OwnV2()
	return mp.Point, own, dir, err
}

// Info describes the cgroup v2 setup a Supervisor would use, as found
// by ProbeCgroup.
type Info struct {
	// Mount is where the cgroup2 filesystem is mounted.
	Mount string `json:"mount,omitempty"`
	// Own is this process's cgroup, as /proc/self/cgroup names it.
	Own string `json:"own,omitempty"`
	// Root is the directory under which a supervisor makes its own
	// (harnessd-<pid>-<random>, one leaf per process tree below it).
	Root string `json:"root,omitempty"`
	// Writable reports that a directory could be made (and removed) in Root.
	Writable bool `json:"writable"`
	// Kill reports that the new directory had cgroup.kill (Linux 5.14+).
	Kill bool `json:"kill"`
	// Controllers lists Root's cgroup.controllers (none are needed for
	// killing; they matter for resource limits).
	Controllers []string `json:"controllers"`
	// Error says why cgroups cannot be used, empty when they can.
	Error string `json:"error,omitempty"`
}

// ProbeCgroup finds the cgroup v2 directory a Supervisor would use (root, or
// this process's own cgroup when root is empty) and tests that a directory
// can be made there and has cgroup.kill. The scratch directory it makes is
// removed before it returns; it never panics.
func Probe(root string) Info {
	var info Info
	if root == "" {
		mp, own, dir, err := DefaultRoot()
		if err != nil {
			info.Error = err.Error()
			return info
		}
		info.Mount, info.Own, root = mp, own, dir
	} else if mp, own, _, err := cgroups.OwnV2(); err == nil {
		info.Mount, info.Own = mp.Point, own
	}
	info.Root = root
	info.Controllers = []string{}
	have, err := cgroups.Controllers(root)
	if err != nil {
		info.Error = err.Error()
		return info
	}
	info.Controllers = append(info.Controllers, have...)
	scratch := filepath.Join(root, fmt.Sprintf("harnessd-probe-%d-%s", os.Getpid(), randomID()))
	if err := os.Mkdir(scratch, 0o755); err != nil {
		info.Error = fmt.Sprintf("cannot create a cgroup in %s: %v", root, err)
		return info
	}
	info.Writable = true
	if _, err := os.Stat(filepath.Join(scratch, "cgroup.kill")); err == nil {
		info.Kill = true
	} else {
		info.Error = "cgroup.kill not available (kernel < 5.14?)"
	}
	if err := os.Remove(scratch); err != nil {
		info.Error = fmt.Sprintf("scratch cgroup %s not removed: %v", scratch, err)
	}
	return info
}

// newCgroupManager creates this daemon's cgroup directory below its own
// cgroup (or below root when given), locks it for as long as the daemon
// lives, checks that a leaf can be made and killed there, and sweeps the
// directories of daemons that are gone (logging what it removed; killing
// what is left in them only with killLeftovers).
func New(root string, killLeftovers bool, log *slog.Logger) (*Manager, error) {
	if root == "" {
		var err error
		if _, _, root, err = DefaultRoot(); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
		return nil, fmt.Errorf("%s is not a cgroup v2 directory: %w", root, err)
	}
	// The pid alone does not name a daemon: every containerised daemon is
	// PID 1 of its own namespace, and namespaces often share one cgroup
	// hierarchy. A random suffix keeps daemons (and supervisors of one
	// process) from ever adopting each other's directory, and the lock
	// keeps them from sweeping it.
	parent := filepath.Join(root, fmt.Sprintf("harnessd-%d-%s", os.Getpid(), randomID()))
	if err := os.Mkdir(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", parent, err)
	}
	lockFD, err := lockDir(parent)
	if err != nil {
		os.Remove(parent)
		return nil, err
	}
	m := &Manager{parent: parent, lockFD: lockFD, ids: make(map[uint64]struct{})}
	if _, err := os.Stat(filepath.Join(parent, "cgroup.kill")); err != nil {
		m.release()
		return nil, fmt.Errorf("cgroup.kill not available (kernel < 5.14?): %w", err)
	}
	probe, err := m.NewLeaf("probe")
	if err != nil {
		m.release()
		return nil, err
	}
	if err := probe.Remove(time.Second); err != nil {
		m.release()
		return nil, err
	}
	sweepCgroups(root, parent, killLeftovers, log)
	return m, nil
}

// release removes the (empty) directory and drops the lock.
func (m *Manager) release() {
	os.Remove(m.parent)
	m.unlock()
}

// unlock drops the directory's lock once.
func (m *Manager) unlock() {
	m.lockMu.Lock()
	defer m.lockMu.Unlock()
	if m.lockFD >= 0 {
		unix.Close(m.lockFD)
		m.lockFD = -1
	}
}

// NewLeaf makes a cgroup for one harness tree under the manager's parent
// (its name from name and a sequence number, so leaves never collide) and
// holds it open by an O_PATH descriptor, which a clone into the cgroup
// uses; its id joins the set IsLeaf answers from.
func (m *Manager) NewLeaf(name string) (*Leaf, error) {
	p := filepath.Join(m.parent, fmt.Sprintf("%s-%d", sanitizeName(name), m.seq.Add(1)))
	if err := os.Mkdir(p, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", p, err)
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(p)
		return nil, fmt.Errorf("open cgroup %s: %w", p, err)
	}
	l := &Leaf{Path: p, FD: fd, owner: m}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil {
		l.ID = st.Ino
		m.idsMu.Lock()
		if m.ids == nil {
			m.ids = make(map[uint64]struct{})
		}
		m.ids[l.ID] = struct{}{}
		m.idsMu.Unlock()
	}
	return l, nil
}

// IsLeaf reports whether id is the cgroup id of one of the live leaves.
func (m *Manager) IsLeaf(id uint64) bool {
	m.idsMu.RLock()
	defer m.idsMu.RUnlock()
	_, ok := m.ids[id]
	return ok
}

// forget drops a removed leaf's id from the set.
func (m *Manager) forget(id uint64) {
	m.idsMu.Lock()
	delete(m.ids, id)
	m.idsMu.Unlock()
}

// Close kills and removes every leaf left under the parent cgroup, then
// the parent, and lets go of the parent's lock once the parent is gone.
func (m *Manager) Close() error {
	removeCgroupTree(m.parent)
	err := os.Remove(m.parent)
	// The lock goes only with the directory: a directory left behind stays
	// locked until this process exits, and is swept after that.
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	m.unlock()
	return nil
}

// removeCgroupTree kills and removes every child cgroup of dir.
func removeCgroupTree(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		l := &Leaf{Path: filepath.Join(dir, e.Name()), FD: -1}
		l.Kill()
		l.Remove(time.Second)
	}
}

func sanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 32 {
		b = b[:32]
	}
	if len(b) == 0 {
		return "p"
	}
	return string(b)
}

// closeFD releases the directory fd once the child has been cloned into it.
func (l *Leaf) CloseFD() {
	if l.FD >= 0 {
		unix.Close(l.FD)
		l.FD = -1
	}
}

// procs lists the pids in the leaf.
func (l *Leaf) Procs() []int { return cgroups.Procs(l.Path) }

// procsBelow lists the pids in the leaf and in any cgroup made below it.
func (l *Leaf) ProcsBelow() []int { return cgroups.ProcsBelow(l.Path) }

// populated reports whether any process is left in the leaf.
func (l *Leaf) Populated() bool { return cgroups.Populated(l.Path) }

// daemonMade reports whether the leaf sits directly in a daemon's own
// directory (harnessd-<pid>-<instance>): the only cgroups whose processes
// signal and kill may touch. A path anywhere else (the caller's cgroup, a
// parent, the hierarchy's root, a plain directory) is never acted on.
func (l *Leaf) DaemonMade() bool {
	return l.Path != "" && daemonDirName.MatchString(filepath.Base(filepath.Dir(l.Path)))
}

// signal sends sig to every process in the leaf.
func (l *Leaf) Signal(sig unix.Signal) {
	if !l.DaemonMade() {
		return
	}
	for _, pid := range l.Procs() {
		unix.Kill(pid, sig)
	}
}

// kill ends every process in the leaf at once.
func (l *Leaf) Kill() error {
	if !l.DaemonMade() {
		return fmt.Errorf("cgroup %s is not a leaf of a daemon's directory: not killed", l.Path)
	}
	return cgroups.Kill(l.Path)
}

// remove deletes the leaf (and any cgroups made below it: a tree that can
// write its leaf may have made some; killing the leaf has killed their
// processes), retrying while the kernel still counts it busy.
func (l *Leaf) Remove(wait time.Duration) error {
	l.CloseFD()
	if err := cgroups.Remove(l.Path, wait); err != nil {
		return err
	}
	if l.owner != nil && l.ID != 0 {
		l.owner.forget(l.ID)
	}
	return nil
}

// Parent is the daemon's directory.
func (m *Manager) Parent() string { return m.parent }

// At returns a Manager over parent, a directory its caller made and owns:
// not locked, probed nor swept (a plain directory posing as a daemon's,
// whose leaves the kernel refuses to clone into, in process's tests).
func At(parent string) *Manager {
	return &Manager{parent: parent, lockFD: -1, ids: make(map[uint64]struct{})}
}

// Found is a leaf found on disk (by a sweep or the peer check), not one
// of this daemon's live leaves: it has no fd and no owner.
func Found(path string) *Leaf { return &Leaf{Path: path, FD: -1} }

// RemoveTree kills and removes every child cgroup of dir.
func RemoveTree(dir string) { removeCgroupTree(dir) }

// randomID is 16 hex digits, as a daemon's directory name ends.
func randomID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
