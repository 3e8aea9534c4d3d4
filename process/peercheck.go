package process

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/harnessd/harnessd/internal/linux/sockdiag"
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
	p := Peer{Harness: s.members.Owns(info.CgroupID), CgroupID: info.CgroupID}
	if p.Harness {
		p.PID = s.members.Holder(info.CgroupID, info.Inode)
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
