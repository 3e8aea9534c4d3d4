package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/process"
)

// peerKey carries the peer verdict of a connection in its context.
type peerKey struct{}

// peerVerdict says whether a connection's peer is a process of a harness
// tree, found once per TCP connection.
type peerVerdict struct {
	harnessPID int // 0: not a harness process (or not found)
}

// connContext runs for every accepted connection and records whether its
// peer belongs to a process tree started by harnessd.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, peerVerdict{harnessPID: harnessPeer(c.LocalAddr(), c.RemoteAddr())})
}

func peerOf(ctx context.Context) peerVerdict {
	v, _ := ctx.Value(peerKey{}).(peerVerdict)
	return v
}

// harnessPeer returns the pid of the process holding the other end of a
// loopback TCP connection when that process carries harnessd's tree marker
// in its environment, else 0. Non-loopback peers are other machines.
func harnessPeer(local, remote net.Addr) int {
	ra, ok1 := remote.(*net.TCPAddr)
	la, ok2 := local.(*net.TCPAddr)
	if !ok1 || !ok2 || !ra.IP.IsLoopback() {
		return 0
	}
	inode := socketInode(ra, la)
	if inode == "" {
		return 0
	}
	target := "socket:[" + inode + "]"
	marker := []byte(process.TreeEnvVar + "=")
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
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
				return pid
			}
		}
	}
	return 0
}

// socketInode finds the inode of the socket whose local end is peer and
// remote end is us, in /proc/net/tcp{,6}.
func socketInode(peer, us *net.TCPAddr) string {
	pa, ok1 := netip.AddrFromSlice(peer.IP)
	ua, ok2 := netip.AddrFromSlice(us.IP)
	if !ok1 || !ok2 {
		return ""
	}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if inode := scanTCP(file, netip.AddrPortFrom(pa.Unmap(), uint16(peer.Port)), netip.AddrPortFrom(ua.Unmap(), uint16(us.Port))); inode != "" {
			return inode
		}
	}
	return ""
}

func scanTCP(file string, local, remote netip.AddrPort) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
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

// parseProcAddr decodes "0100007F:1F40" (and the 32-hex-digit IPv6 form):
// the address is stored as 32-bit words in host (little-endian) order.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad port %q", s)
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
