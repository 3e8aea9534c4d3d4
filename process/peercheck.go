package process

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/harnessd/harnessd/internal/linux/sockdiag"
	"github.com/harnessd/harnessd/process/internal/cgtree"
)

// Peer check mechanisms, as Mechanisms.PeerCheck names them.
const (
	// PeerCheckCgroup asks sock_diag for the cgroup v2 id of the peer's
	// socket and compares it with the live trees' cgroup leaves (and their
	// sub-cgroups): no /proc scan, and a child that drops its environment
	// is still caught.
	PeerCheckCgroup = "sock_diag+cgroup"
	// PeerCheckAncestry is the fallback without cgroup leaves or
	// sock_diag: the peer socket's inode from /proc/net/tcp, then a scan of
	// the open files of the trees' members by ancestry (parent chain,
	// group, session, members recorded by the tracker) — never by the
	// environment, which a child can clear.
	PeerCheckAncestry = "proc_scan+ancestry"
)

// foreignCacheMax bounds the set of cgroup ids known not to be a tree's.
const foreignCacheMax = 4096

// cgroupMembership answers "is this cgroup id one of ours?": a live leaf, a
// cgroup made below one (a harness that can write its leaf, as root can in
// process isolation, may make sub-cgroups and move into them), the
// daemon's directory itself, or those of other harnessd daemons beside it. Cgroup ids are never reused while the system
// runs and a cgroup cannot be moved to another parent (rename stays within
// one parent), so a "not ours" verdict for an id holds for good and is
// cached; only ids not seen before pay a walk of the daemon's directory.
type cgroupMembership struct {
	m         *cgtree.Manager
	foreignMu sync.Mutex
	foreign   map[uint64]struct{}
}

func newCgroupMembership(m *cgtree.Manager) *cgroupMembership {
	return &cgroupMembership{m: m, foreign: make(map[uint64]struct{})}
}

func (c *cgroupMembership) owns(id uint64) bool {
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
func (c *cgroupMembership) below(id uint64) bool { return c.path(id) != "" }

// path returns the directory of cgroup id among the daemons' directories, or "".
func (c *cgroupMembership) path(id uint64) string {
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

// holder returns the pid of the process in cgroup id that has the socket
// with inode open, or 0. It reads only that cgroup's processes: it runs
// for refused peers, to name them in the log.
func (c *cgroupMembership) holder(id uint64, inode uint32) int {
	dir := c.path(id)
	if dir == "" {
		return 0
	}
	leaf := cgtree.Found(dir)
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

// probeSockDiag checks that sock_diag answers an exact lookup with a cgroup
// id, on a loopback connection of this process's own.
func probeSockDiag() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("loopback listener: %w", err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return fmt.Errorf("loopback dial: %w", err)
	}
	defer c.Close()
	if a, err := ln.Accept(); err == nil {
		a.Close()
	}
	info, err := sockdiag.Lookup(c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort())
	if err != nil {
		return err
	}
	if info.CgroupID == 0 {
		return errors.New("sock_diag gives no cgroup id (kernel < 5.7?)")
	}
	return nil
}

// PeerOf finds whether the process at the other end of a loopback TCP
// connection (local and remote as seen by the side that accepted it)
// belongs to one of this supervisor's trees, by the mechanism
// Mechanisms().PeerCheck names. By cgroup, a peer whose socket is in a
// foreign cgroup is also looked for among the tree members the tracker saw
// leave their leaf (Peer.Escaped). A peer socket that no longer exists (or
// survives only as a TIME_WAIT remnant) gives Peer{Gone: true}, not an
// error: it is not a harness as far as anyone can tell. A remote address
// that is not loopback gives a zero Peer without a lookup. It errors on
// addresses that are not TCP and when the lookup itself fails.
func (s *Supervisor) PeerOf(local, remote net.Addr) (Peer, error) {
	peerEnd, ourEnd, loopback, err := peerEnds(local, remote)
	if err != nil || !loopback {
		return Peer{}, err
	}
	if s.members == nil {
		return s.peerByAncestry(peerEnd, ourEnd)
	}
	info, err := sockdiag.Lookup(peerEnd, ourEnd)
	switch {
	case errors.Is(err, sockdiag.ErrGone):
		return Peer{Gone: true}, nil
	case err != nil:
		return Peer{}, fmt.Errorf("peer lookup: %w", err)
	case info.CgroupID == 0:
		return Peer{Gone: true}, nil
	}
	p := Peer{Harness: s.members.owns(info.CgroupID), CgroupID: info.CgroupID}
	if p.Harness {
		p.PID = s.members.holder(info.CgroupID, info.Inode)
	} else if pid := s.escapeeHolding(info.Inode); pid != 0 {
		p.PID, p.Harness, p.Escaped = pid, true, true
	}
	return p, nil
}

// escapeeHolding returns the pid of a tree member that left the daemon's
// cgroup directory (as the tracker last saw), or of a descendant of one,
// that has the socket with inode open; 0 when none. Without escapees it
// costs one atomic load.
func (s *Supervisor) escapeeHolding(inode uint32) int {
	if s.escapees.Load() == 0 {
		return 0
	}
	escaped := map[int]uint64{}
	for _, p := range s.launchedTrees() {
		for pid, start := range p.escaped.snapshot() {
			escaped[pid] = start
		}
	}
	if len(escaped) == 0 {
		return 0
	}
	ix := scanIndex()
	var roots []int
	for pid, start := range escaped {
		if st, ok := ix.byPid[pid]; ok && st.StartTicks == start { // not a reused pid
			roots = append(roots, pid)
		}
	}
	target := "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
	seen := map[int]bool{}
	for len(roots) > 0 {
		pid := roots[0]
		roots = roots[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if holds(pid, target) {
			return pid
		}
		roots = append(roots, ix.kids[pid]...)
	}
	return 0
}

// peerEnds returns the peer socket's own (local) end and its remote end (us),
// and whether the peer is on this machine's loopback.
func peerEnds(local, remote net.Addr) (peerEnd, ourEnd netip.AddrPort, loopback bool, err error) {
	ra, ok1 := remote.(*net.TCPAddr)
	la, ok2 := local.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return peerEnd, ourEnd, false, fmt.Errorf("peer lookup: not a TCP connection (%T, %T)", local, remote)
	}
	if !ra.IP.IsLoopback() {
		return peerEnd, ourEnd, false, nil
	}
	pa, ok1 := netip.AddrFromSlice(ra.IP)
	ua, ok2 := netip.AddrFromSlice(la.IP)
	if !ok1 || !ok2 {
		return peerEnd, ourEnd, false, fmt.Errorf("peer lookup: bad addresses %v, %v", local, remote)
	}
	return netip.AddrPortFrom(pa.Unmap(), uint16(ra.Port)), netip.AddrPortFrom(ua.Unmap(), uint16(la.Port)), true, nil
}
