package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Sweep ends every TCP and UDP socket (IPv4 and IPv6, in every state,
// TIME_WAIT included) of the calling thread's network namespace with
// sock_diag's SOCK_DESTROY, and then lists them again: it returns how
// many are still there (with the first refusal when any is). A listener
// a process still holds may refuse (EINVAL on Linux 6.x). Destroying needs CAP_NET_ADMIN over the
// namespace and a kernel built with CONFIG_INET_DIAG_DESTROY; without
// them nothing is ended and the error says why. Sockets a process still
// holds are aborted (its calls fail with ECONNABORTED), so Sweep is for a
// namespace whose processes are gone: it is how a kept network namespace
// loses what an earlier tenant left in the kernel (a connection in
// TIME_WAIT names its ports for a minute). When Lingering counts none, it
// returns at once.
func Sweep() (left int, err error) {
	if n, err := Lingering(); err == nil && n == 0 {
		return 0, nil // nothing to walk the tables for
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(sockDiagTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, fmt.Errorf("sock_diag timeout: %w", err)
	}
	var errs []error
	for _, k := range sweptKinds {
		ids, err := dump(fd, k)
		if err != nil {
			return 0, err
		}
		for _, id := range ids {
			if err := destroy(fd, k, id); err != nil && !errors.Is(err, ErrGone) {
				errs = append(errs, err)
			}
		}
	}
	for _, k := range sweptKinds {
		ids, err := dump(fd, k)
		if err != nil {
			return 0, err
		}
		left += len(ids)
	}
	if left > 0 && len(errs) > 0 {
		return left, fmt.Errorf("sock_diag destroy: %w", errs[0])
	}
	return left, nil
}

// socketKind is one family and protocol sock_diag lists.
type socketKind struct{ family, protocol byte }

var sweptKinds = []socketKind{
	{unix.AF_INET, unix.IPPROTO_TCP}, {unix.AF_INET6, unix.IPPROTO_TCP},
	{unix.AF_INET, unix.IPPROTO_UDP}, {unix.AF_INET6, unix.IPPROTO_UDP},
}

// sockID is an inet_diag_sockid as the kernel sent it (ports, addresses,
// interface and cookie), which SOCK_DESTROY takes back as it is.
type sockID [48]byte

// request builds an inet_diag_req_v2 of kind with type typ and flags;
// id names one socket (nil: a dump of every state).
func request(k socketKind, typ, flags uint16, id *sockID) []byte {
	msg := make([]byte, unix.SizeofNlMsghdr+inetDiagReqV2Len)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], typ)
	ne.PutUint16(msg[6:], flags)
	r := msg[unix.SizeofNlMsghdr:]
	r[0], r[1] = k.family, k.protocol
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	if id != nil {
		copy(r[8:], id[:])
	}
	return msg
}

// dump lists the ids of every socket of kind.
func dump(fd int, k socketKind) ([]sockID, error) {
	if err := unix.Sendto(fd, request(k, unix.SOCK_DIAG_BY_FAMILY, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, nil), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag dump: %w", err)
	}
	var ids []sockID
	buf := make([]byte, 32<<10)
	for {
		msgs, err := receiveMessages(fd, buf)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return ids, nil
			case unix.NLMSG_ERROR:
				return nil, netlinkError(m.Data)
			case unix.SOCK_DIAG_BY_FAMILY:
				if len(m.Data) < inetDiagMsgLen {
					return nil, fmt.Errorf("sock_diag dump: %d bytes, want at least %d", len(m.Data), inetDiagMsgLen)
				}
				var id sockID
				copy(id[:], m.Data[4:52])
				ids = append(ids, id)
			}
		}
	}
}

// destroy ends the socket of kind named id.
func destroy(fd int, k socketKind, id sockID) error {
	if err := unix.Sendto(fd, request(k, unix.SOCK_DESTROY, unix.NLM_F_REQUEST|unix.NLM_F_ACK, &id), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("sock_diag destroy: %w", err)
	}
	buf := make([]byte, 4096)
	for {
		msgs, err := receiveMessages(fd, buf)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Type == unix.NLMSG_ERROR {
				return netlinkError(m.Data)
			}
		}
	}
}

// receiveMessages reads one datagram of netlink messages into buf.
func receiveMessages(fd int, buf []byte) ([]syscall.NetlinkMessage, error) {
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sock_diag receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("sock_diag reply: %w", err)
		}
		return msgs, nil
	}
}

// netlinkError reads an NLMSG_ERROR: nil for an acknowledgement, ErrGone
// for ENOENT, else the errno.
func netlinkError(data []byte) error {
	if len(data) < 4 {
		return errors.New("sock_diag reply: short error message")
	}
	switch errno := unix.Errno(-int32(binary.NativeEndian.Uint32(data))); errno {
	case 0:
		return nil
	case unix.ENOENT:
		return ErrGone
	default:
		return errno
	}
}

// Lingering counts the TCP and UDP sockets of the calling thread's
// network namespace as /proc/net/sockstat and sockstat6 count them: those
// in its hash tables (TCP's "inuse", orphans included) and its TIME_WAIT
// ones ("tw"), per namespace. Reading them costs a few lines; a dump
// walks the kernel's socket tables, which every namespace shares.
func Lingering() (int, error) {
	n := 0
	for _, f := range []string{"/proc/thread-self/net/sockstat", "/proc/thread-self/net/sockstat6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, fmt.Errorf("count sockets: %w", err)
		}
		c, err := countSockstat(string(b))
		if err != nil {
			return 0, fmt.Errorf("count sockets: %s: %w", f, err)
		}
		n += c
	}
	return n, nil
}

// countSockstat adds up the TCP and UDP "inuse" and TCP "tw" counts of a
// sockstat file.
func countSockstat(s string) (int, error) {
	n, seen := 0, 0
	for _, line := range strings.Split(s, "\n") {
		proto, rest, ok := strings.Cut(line, ":")
		if !ok || !slices.Contains([]string{"TCP", "UDP", "TCP6", "UDP6"}, proto) {
			continue
		}
		f := strings.Fields(rest)
		for i := 0; i+1 < len(f); i += 2 {
			if f[i] != "inuse" && !(f[i] == "tw" && proto == "TCP") {
				continue
			}
			v, err := strconv.Atoi(f[i+1])
			if err != nil {
				return 0, fmt.Errorf("bad count %q", line)
			}
			n += v
			seen++
		}
	}
	if seen == 0 {
		return 0, errors.New("no TCP or UDP counts")
	}
	return n, nil
}
