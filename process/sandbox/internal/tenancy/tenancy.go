// Package tenancy puts what a sandbox's init owns inside back to new for a
// later tenant (the next episode of a session): it empties the sandbox's
// own scratch file systems back to their usage at setup and the IPC
// namespace of every object, ends what is left of the network namespace's
// sockets, kills what is left of the PID namespace's processes and checks
// that it holds nothing but the init, and resets its pid counter.
// It runs in the init only; it knows nothing of the control channel, the
// doors or the files below the binds (the daemon's to empty).
package tenancy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/ipcns"
	"github.com/harnessd/harnessd/internal/linux/sockdiag"
)

// maxEntries bounds how many files a tenant may leave in the
// sandbox's own /tmp and /dev/shm for a recycle to remove them one by one:
// above it, a new sandbox costs less.
const maxEntries = 4096

// Mount is one of the sandbox's own writable file systems (a tmpfs: /tmp,
// /dev/shm) as its init mounts it.
type Mount struct {
	Dir   string
	Flags uintptr
	Data  string
}

// Scratch is a Mount as it was set up: the entries the init made there
// (mount points of binds), whether a mount lies below it, its usage and
// its root's times then.
type Scratch struct {
	Mount
	setup        map[string]bool
	nested       bool
	fresh        unix.Statfs_t
	atime, mtime unix.Timespec
}

// State is what the init notes at setup to put the sandbox back for a
// later tenant: its own scratch file systems as they were made, and a
// view of the namespace's POSIX message queues, opened at the first
// recycle (a sandbox never recycled, a side sandbox's, pays nothing for
// it; nil where the kernel has no detached mounts: each clear then
// mounts mqueue on mqueueDir for the moment it takes).
type State struct {
	Scratches []Scratch
	queues    *ipcns.Queues
	tried     bool // the view was asked for
	mqueueDir string
	sockets   *sockdiag.Counter // opened at the first SweepSockets
}

// Note records mounts (Record), with mqueueDir (an empty directory) the
// mount point of the queues' view where it cannot be kept mounted
// nowhere.
func Note(mounts []Mount, mqueueDir string) (*State, error) {
	scratches, err := Record(mounts)
	if err != nil {
		return nil, err
	}
	return &State{Scratches: scratches, mqueueDir: mqueueDir}, nil
}

// ClearIPC removes every System V object and POSIX message queue of the
// namespace, and checks that none is left.
func (s *State) ClearIPC() error {
	if err := ipcns.ClearSysV(); err != nil {
		return err
	}
	if !s.tried {
		s.tried = true
		if q, err := ipcns.OpenQueues(); err == nil {
			s.queues = q
		}
	}
	if s.queues != nil {
		return s.queues.Clear()
	}
	return ipcns.ClearMessageQueues(s.mqueueDir)
}

// SweepSockets ends what the last tenant left of the network
// namespace's sockets and returns how many are left (sockdiag.Sweep). The
// Counter it counts with is opened at the first call, in the calling
// thread's namespace (every thread of the init shares one), and kept.
func (s *State) SweepSockets() (int, error) {
	if s.sockets == nil {
		c, err := sockdiag.OpenCounter()
		if err != nil {
			return 0, err
		}
		s.sockets = c
	}
	return s.sockets.Sweep()
}

// Record notes each mount as it is once the root is built, for Empty to
// restore. The mount table is read here, once per sandbox: what lies
// below a scratch file system is the init's binds, fixed at setup (a
// tenant without mount rights adds none; one it could add would go with
// the remount, or fail the removal of entries).
func Record(mounts []Mount) ([]Scratch, error) {
	points, err := mountPoints()
	if err != nil {
		return nil, err
	}
	var out []Scratch
	for _, m := range mounts {
		s := Scratch{Mount: m, setup: map[string]bool{}, nested: anyBelow(points, m.Dir)}
		ents, err := os.ReadDir(m.Dir)
		if err != nil {
			return nil, fmt.Errorf("note %s: %w", m.Dir, err)
		}
		for _, e := range ents {
			s.setup[e.Name()] = true
		}
		if err := unix.Statfs(m.Dir, &s.fresh); err != nil {
			return nil, fmt.Errorf("note %s: %w", m.Dir, err)
		}
		var st unix.Stat_t
		if err := unix.Stat(m.Dir, &st); err != nil {
			return nil, fmt.Errorf("note %s: %w", m.Dir, err)
		}
		s.atime, s.mtime = st.Atim, st.Mtim
		out = append(out, s)
	}
	return out, nil
}

// Empty puts the file system back to how it was set up. Without a mount
// below it, a new tmpfs replaces it (nothing of the last one's, its inode
// numbers included, is left); with one (a bind's mount point, root's),
// every entry a tenant made is removed (a tenant cannot write below the
// init's own). Either way its root gets its times at setup back, and its
// usage must be exactly that at setup (no file left, none still held
// open).
func (s Scratch) Empty() error {
	var err error
	if s.nested {
		err = s.removeEntries()
	} else {
		err = s.remount()
	}
	if err != nil {
		return err
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, s.Dir, []unix.Timespec{s.atime, s.mtime}, 0); err != nil {
		return fmt.Errorf("%s: restore its times: %w", s.Dir, err)
	}
	var now unix.Statfs_t
	if err := unix.Statfs(s.Dir, &now); err != nil {
		return err
	}
	if now.Files-now.Ffree != s.fresh.Files-s.fresh.Ffree || now.Bfree != s.fresh.Bfree {
		return fmt.Errorf("%s is not back to fresh: %d inodes and %d free blocks, %d and %d at setup",
			s.Dir, now.Files-now.Ffree, now.Bfree, s.fresh.Files-s.fresh.Ffree, s.fresh.Bfree)
	}
	return nil
}

// remount replaces the file system with a new one of the same options.
func (s Scratch) remount() error {
	if err := unix.Unmount(s.Dir, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s: %w", s.Dir, err)
	}
	if err := unix.Mount("tmpfs", s.Dir, "tmpfs", s.Flags, s.Data); err != nil {
		return fmt.Errorf("mount a new %s: %w", s.Dir, err)
	}
	return nil
}

// removeEntries removes every entry of the root the init did not make.
func (s Scratch) removeEntries() error {
	var now unix.Statfs_t
	if err := unix.Statfs(s.Dir, &now); err != nil {
		return err
	}
	if used := (now.Files - now.Ffree) - (s.fresh.Files - s.fresh.Ffree); used > maxEntries {
		return fmt.Errorf("%s holds %d files: more than %d are cheaper to drop with the sandbox", s.Dir, used, maxEntries)
	}
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if s.setup[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.Dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// mountPoints lists the mount points of this process's mount table.
func mountPoints() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			points = append(points, f[4])
		}
	}
	return points, nil
}

// anyBelow reports whether a mount point of points lies below dir.
func anyBelow(points []string, dir string) bool {
	for _, p := range points {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// OnlyInitLeft checks that the PID namespace holds no process but the
// init (the caller has killed and reaped the rest).
func OnlyInitLeft() error {
	d, err := os.Open("/proc")
	if err != nil {
		return err
	}
	defer d.Close()
	// Names only, unsorted: a recycle's check need not pay for more.
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil && pid != 1 {
			return fmt.Errorf("process %d outlived the kill of the namespace", pid)
		}
	}
	return nil
}

// ResetPidCounter makes the namespace hand out pids from the lowest free
// one again, as a new namespace does: how many pids a tenant used is not
// readable by the next.
func ResetPidCounter() error {
	err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte("1"), 0)
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("reset the namespace's pid counter: %w (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE over the sandbox)", err)
	}
	return err
}
