package process

import (
	"bufio"

	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/internal/linux/sockdiag"
)

// Peer is the local process at the other end of a loopback TCP connection,
// as far as Supervisor.PeerOf could tell.
type Peer struct {
	// PID is the process holding the peer's socket; 0 when none was found
	// (by cgroup it is looked up only for a harness peer).
	PID int
	// Harness reports that the peer belongs to a process tree started by
	// harnessd: its socket's cgroup is a tree's (PeerCheckCgroup), its
	// holder is a tree member that moved itself out of its leaf (Escaped),
	// or its holder is a member by ancestry (PeerCheckAncestry).
	Harness bool
	// Escaped reports a harness peer found outside the trees' cgroups: a
	// member the tracker saw leave its leaf.
	Escaped bool
	// CgroupID is the peer socket's cgroup v2 id (PeerCheckCgroup only).
	CgroupID uint64
	// Gone reports that no live peer socket was found: the peer has closed
	// its end (or it is not visible to this daemon).
	Gone bool
}

// peerSocketInode finds the inode of the peer's socket (its own end is
// peerEnd, its remote end ourEnd) in /proc/net/tcp{,6}: "" when no live
// socket has that 4-tuple (TIME_WAIT remnants have inode 0).
func peerSocketInode(peerEnd, ourEnd netip.AddrPort) (string, error) {
	read := false
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		read = true
		inode := socketInode(f, peerEnd, ourEnd)
		f.Close()
		if inode != "" && inode != "0" {
			return inode, nil
		}
	}
	if !read {
		return "", errors.New("peer lookup: /proc/net/tcp and /proc/net/tcp6 unreadable")
	}
	return "", nil
}

// peerByAncestry is the peer check without cgroup leaves or sock_diag
// (PeerCheckAncestry): the peer socket's inode (by sock_diag where it
// answers, else from /proc/net/tcp), then,
// from one scan of /proc, the live trees' members by ancestry (leader,
// group, session, members the tracker recorded, and their descendants:
// memberPids), whose open files are searched for the socket. The
// environment plays no part.
func (s *Supervisor) peerByAncestry(peerEnd, ourEnd netip.AddrPort) (Peer, error) {
	var inode string
	if s.sockDiag {
		// One netlink request rather than a read of the whole TCP table
		// (milliseconds on a host with many sockets).
		info, err := sockdiag.Lookup(peerEnd, ourEnd)
		switch {
		case errors.Is(err, sockdiag.ErrGone):
		case err != nil:
			return Peer{}, fmt.Errorf("peer lookup: %w", err)
		case info.Inode != 0:
			inode = strconv.FormatUint(uint64(info.Inode), 10)
		}
	} else {
		var err error
		if inode, err = peerSocketInode(peerEnd, ourEnd); err != nil {
			return Peer{}, err
		}
	}
	if inode == "" {
		return Peer{Gone: true}, nil
	}
	trees := s.launchedTrees()
	if len(trees) == 0 {
		return Peer{}, nil
	}
	ix := scanIndex()
	target := "socket:[" + inode + "]"
	for _, p := range trees {
		var seeds []int
		if p.leaf != nil {
			seeds = p.leaf.ProcsBelow()
		}
		for pid := range p.memberPids(ix, seeds) {
			if holds(pid, target) {
				return Peer{PID: pid, Harness: true}, nil
			}
		}
	}
	return Peer{}, nil
}

// holds reports whether process pid has target ("socket:[inode]") open.
func holds(pid int, target string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if l, err := os.Readlink(dir + fd.Name()); err == nil && l == target {
			return true
		}
	}
	return false
}

// socketInode scans a /proc/net/tcp{,6} table for the socket with the given
// local and remote ends and returns its inode, or "".
func socketInode(table *os.File, local, remote netip.AddrPort) string {
	sc := bufio.NewScanner(table)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 {
			continue
		}
		l, err1 := parseProcAddr(fs[1])
		r, err2 := parseProcAddr(fs[2])
		if err1 == nil && err2 == nil && l == local && r == remote {
			return fs[9]
		}
	}
	return ""
}

var errBadProcAddr = errors.New("bad /proc/net address")

// parseProcAddr decodes "0100007F:1F40" (and the 32-hex-digit IPv6 form):
// the address is stored as 32-bit words in host (little-endian) order.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%w %q", errBadProcAddr, s)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("%w %q", errBadProcAddr, s)
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: port in %q", errBadProcAddr, s)
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
