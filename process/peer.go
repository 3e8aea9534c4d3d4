package process

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// Peer is the local process at the other end of a loopback TCP connection,
// as far as PeerOf could tell.
type Peer struct {
	// PID is the process holding the peer's socket; 0 when none was found
	// (by cgroup it is looked up only for a harness peer).
	PID int
	// Harness reports that the peer belongs to a process tree started by
	// harnessd: its socket's cgroup is a tree's (Supervisor.PeerOf with
	// PeerCheckCgroup), or its holder carries TreeEnvVar in its initial
	// environment (the /proc scan).
	Harness bool
	// CgroupID is the peer socket's cgroup v2 id (PeerCheckCgroup only).
	CgroupID uint64
	// Gone reports that no live peer socket was found: the peer has closed
	// its end (or it is not visible to this daemon).
	Gone bool
}

// PeerOf is the /proc-scan peer check (PeerCheckMarker) that
// Supervisor.PeerOf falls back to without cgroup leaves or sock_diag. It
// finds the process that holds the other end of the TCP connection
// whose local address is local and remote address is remote (as seen by the
// side that accepted it), and whether it belongs to a harness tree. It looks
// the connection up in /proc/net/tcp{,6} to get the peer socket's inode, then
// looks for that socket among the open files of processes that carry the
// tree marker. Only marked processes are searched, so a Peer with PID 0 means
// "not a harness process" (or not visible to this daemon). A remote address
// that is not loopback belongs to another machine: PeerOf returns a zero Peer
// without looking. It errors only on addresses that are not TCP and on an
// unreadable /proc.
func PeerOf(local, remote net.Addr) (Peer, error) {
	peerEnd, ourEnd, loopback, err := peerEnds(local, remote)
	if err != nil || !loopback {
		return Peer{}, err
	}
	var inode string
	read := false
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		read = true
		inode = socketInode(f, peerEnd, ourEnd)
		f.Close()
		if inode != "" {
			break
		}
	}
	if !read {
		return Peer{}, errors.New("peer lookup: /proc/net/tcp and /proc/net/tcp6 unreadable")
	}
	if inode == "" || inode == "0" { // TIME_WAIT remnants have inode 0
		return Peer{Gone: true}, nil
	}
	pid, err := markedHolderOf("socket:[" + inode + "]")
	if err != nil || pid == 0 {
		return Peer{}, err
	}
	return Peer{PID: pid, Harness: true}, nil
}

// markedHolderOf returns the pid of a process carrying the tree marker that
// has target ("socket:[inode]") open, or 0.
func markedHolderOf(target string) (int, error) {
	marker := []byte(TreeEnvVar + "=")
	d, err := os.Open("/proc")
	if err != nil {
		return 0, fmt.Errorf("peer lookup: %w", err)
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil || !bytes.Contains(env, marker) {
			continue
		}
		fds, err := os.ReadDir("/proc/" + name + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink("/proc/" + name + "/fd/" + fd.Name()); err == nil && l == target {
				pid, _ := strconv.Atoi(name)
				return pid, nil
			}
		}
	}
	return 0, nil
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
