package cgtree

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// foreignCacheMax bounds the set of cgroup ids known not to be a tree's.
const foreignCacheMax = 4096

// Membership answers "is this cgroup id one of ours?": a live leaf, a
// cgroup made below one (a harness that can write its leaf, as root can in
// process isolation, may make sub-cgroups and move into them), the
// daemon's directory itself, or those of other harnessd daemons beside it. Cgroup ids are never reused while the system
// runs and a cgroup cannot be moved to another parent (rename stays within
// one parent), so a "not ours" verdict for an id holds for good and is
// cached; only ids not seen before pay a walk of the daemon's directory.
type Membership struct {
	m         *Manager
	foreignMu sync.Mutex
	foreign   map[uint64]struct{}
}

// NewMembership answers for m's leaves and directory.
func NewMembership(m *Manager) *Membership {
	return &Membership{m: m, foreign: make(map[uint64]struct{})}
}

// Owns reports whether cgroup id is one of ours (see Membership).
func (c *Membership) Owns(id uint64) bool {
	if c.m.IsLeaf(id) {
		return true
	}
	c.foreignMu.Lock()
	_, known := c.foreign[id]
	c.foreignMu.Unlock()
	if known {
		return false
	}
	if c.below(id) {
		return true
	}
	c.foreignMu.Lock()
	if len(c.foreign) >= foreignCacheMax {
		clear(c.foreign)
	}
	c.foreign[id] = struct{}{}
	c.foreignMu.Unlock()
	return false
}

// below walks the daemons' cgroup directories for a directory whose inode
// is id: this daemon's and those of other harnessd daemons beside it (the
// harnessd-* siblings in the same cgroup), whose harnesses must not reach
// this daemon either, as the tree marker also said.
func (c *Membership) below(id uint64) bool { return c.path(id) != "" }

// path returns the directory of cgroup id among the daemons' directories, or "".
func (c *Membership) path(id uint64) string {
	root := filepath.Dir(c.m.Parent())
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "harnessd-") {
			continue
		}
		if p := walkFinds(filepath.Join(root, e.Name()), id); p != "" {
			return p
		}
	}
	return ""
}

// Holder returns the pid of the process in cgroup id that has the socket
// with inode open, or 0. It reads only that cgroup's processes: it runs
// for refused peers, to name them in the log.
func (c *Membership) Holder(id uint64, inode uint32) int {
	dir := c.path(id)
	if dir == "" {
		return 0
	}
	leaf := Found(dir)
	target := "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
	for _, pid := range leaf.Procs() {
		fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name()); err == nil && l == target {
				return pid
			}
		}
	}
	return 0
}

// walkFinds returns dir or the directory below it whose inode is id, or "".
func walkFinds(dir string, id uint64) string {
	found := ""
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil // a leaf removed meanwhile, or a control file
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Ino == id {
				found = path
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found
}
