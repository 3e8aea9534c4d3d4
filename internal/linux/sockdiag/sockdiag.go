// Package sockdiag asks the kernel about one TCP socket through sock_diag
// netlink: its owner uid, inode and cgroup v2 id, for the peer check of
// package process. It only asks; what a socket's cgroup means is the
// caller's.
package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// This file asks the kernel about one TCP socket through sock_diag netlink
// (NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY with an inet_diag_req_v2 naming
// the exact 4-tuple). golang.org/x/sys/unix has the socket calls and
// constants but not the inet_diag structures, so they are laid out here
// (uapi/linux/inet_diag.h; stable kernel ABI, native byte order except the
// ports and addresses, which are network order).

const (
	inetDiagReqV2Len = 56 // family, protocol, ext, pad, states, inet_diag_sockid(48)
	inetDiagMsgLen   = 72 // family, state, timer, retrans, sockid(48), expires, rqueue, wqueue, uid, inode
	// inetDiagCgroupID is INET_DIAG_CGROUP_ID (Linux 5.7+): the cgroup v2 id
	// (the cgroup directory's inode number) the socket was created in.
	inetDiagCgroupID = 21
	// sockDiagTimeout bounds the wait for the kernel's answer.
	sockDiagTimeout = time.Second
	// nlaTypeMask strips the NLA_F_NESTED and NLA_F_NET_BYTEORDER flags.
	nlaTypeMask = 0x3fff
)

// Info is what sock_diag says about one socket.
type Info struct {
	UID   uint32
	Inode uint32
	// CgroupID is the socket's cgroup v2 id; 0 when the reply had none (a
	// TIME_WAIT or orphaned FIN_WAIT2 socket keeps no cgroup).
	CgroupID uint64
}

// ErrGone says the kernel knows no live socket with that 4-tuple.
var ErrGone = errors.New("no such socket")

// Lookup returns the TCP socket whose local end is local and remote
// end is remote. It returns ErrGone when no such socket exists, and
// other errors when sock_diag itself fails.
func Lookup(local, remote netip.AddrPort) (Info, error) {
	req, err := inetDiagRequest(local, remote)
	if err != nil {
		return Info{}, err
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return Info{}, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(sockDiagTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return Info{}, fmt.Errorf("sock_diag timeout: %w", err)
	}
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return Info{}, fmt.Errorf("sock_diag send: %w", err)
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Info{}, fmt.Errorf("sock_diag receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return Info{}, fmt.Errorf("sock_diag reply: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return Info{}, errors.New("sock_diag reply: short error message")
				}
				errno := -int32(binary.NativeEndian.Uint32(m.Data))
				if errno == 0 {
					continue // an acknowledgement
				}
				if unix.Errno(errno) == unix.ENOENT {
					return Info{}, ErrGone
				}
				return Info{}, fmt.Errorf("sock_diag: %w", unix.Errno(errno))
			case unix.NLMSG_DONE:
				return Info{}, ErrGone
			case unix.SOCK_DIAG_BY_FAMILY:
				return parseInetDiagMsg(m.Data)
			}
		}
	}
}

// inetDiagRequest builds the netlink message asking for exactly one socket.
func inetDiagRequest(local, remote netip.AddrPort) ([]byte, error) {
	la, ra := local.Addr().Unmap(), remote.Addr().Unmap()
	family := byte(unix.AF_INET6)
	if la.Is4() && ra.Is4() {
		family = unix.AF_INET
	} else if la.Is4() != ra.Is4() {
		return nil, fmt.Errorf("sock_diag: mixed address families %v, %v", local, remote)
	}
	msg := make([]byte, unix.SizeofNlMsghdr+inetDiagReqV2Len)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	r := msg[unix.SizeofNlMsghdr:]
	r[0] = family
	r[1] = unix.IPPROTO_TCP
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	putDiagAddr(id[4:20], la)
	putDiagAddr(id[20:36], ra)
	ne.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], ^uint32(0))
	return msg, nil
}

func putDiagAddr(dst []byte, a netip.Addr) {
	if a.Is4() {
		b := a.As4()
		copy(dst, b[:])
		return
	}
	b := a.As16()
	copy(dst, b[:])
}

// parseInetDiagMsg reads an inet_diag_msg and its attributes.
func parseInetDiagMsg(b []byte) (Info, error) {
	if len(b) < inetDiagMsgLen {
		return Info{}, fmt.Errorf("sock_diag reply: %d bytes, want at least %d", len(b), inetDiagMsgLen)
	}
	ne := binary.NativeEndian
	info := Info{UID: ne.Uint32(b[64:]), Inode: ne.Uint32(b[68:])}
	attrs := b[inetDiagMsgLen:]
	for len(attrs) >= unix.SizeofRtAttr {
		l, typ := int(ne.Uint16(attrs[0:])), ne.Uint16(attrs[2:])
		if l < unix.SizeofRtAttr || l > len(attrs) {
			return Info{}, fmt.Errorf("sock_diag reply: bad attribute length %d", l)
		}
		if typ&nlaTypeMask == inetDiagCgroupID && l >= unix.SizeofRtAttr+8 {
			info.CgroupID = ne.Uint64(attrs[unix.SizeofRtAttr:])
		}
		next := (l + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1)
		if next > len(attrs) {
			break
		}
		attrs = attrs[next:]
	}
	return info, nil
}
