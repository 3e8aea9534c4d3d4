package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Sweep ends every socket the calling thread's network namespace still
// holds once its processes are gone, and counts what is left (Census):
// TCP and UDP sockets (IPv4 and IPv6, in every state, TIME_WAIT
// included) it destroys with sock_diag's SOCK_DESTROY; Unix sockets that
// only descriptors in flight hold (a cycle of sockets sent over each
// other) it has the kernel collect. It returns how many sockets of any
// protocol are left, with an error naming them when any is. Destroying
// needs CAP_NET_ADMIN over the namespace and a kernel built with
// CONFIG_INET_DIAG_DESTROY. Sockets a process still holds are aborted
// (its calls fail with ECONNABORTED), so Sweep is for a namespace whose
// processes are gone: it is how a kept network namespace loses what an
// earlier tenant left in the kernel. When Census counts none, it returns
// at once: a dump walks the kernel's socket tables, which every
// namespace shares.
func Sweep() (left int, err error) {
	c, err := OpenCounter()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.Sweep()
}

// Sweep is the package's Sweep in the namespace k counts, which must be
// the calling thread's.
func (k *Counter) Sweep() (left int, err error) {
	c, err := k.Census()
	if err != nil || len(c) == 0 {
		return 0, err
	}
	var errs []error
	if unixSockets(c) > 0 {
		collectUnixCycles()
	}
	if c["TCP"]+c["TCPv6"]+c["UDP"]+c["UDPv6"]+c[timeWait] > 0 {
		errs = append(errs, destroyInet())
	}
	// The kernel collects Unix cycles, and frees an MPTCP socket once its
	// subflows are gone, in the background: count again, with growing
	// pauses, until none is left or collectWait has passed.
	deadline := time.Now().Add(collectWait)
	for wait := time.Millisecond; ; wait *= 2 {
		if c, err = k.Census(); err != nil {
			return 0, err
		}
		left = 0
		for _, n := range c {
			left += n
		}
		if left == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(min(wait, time.Until(deadline)+time.Millisecond))
	}
	if left > 0 {
		if err := errors.Join(errs...); err != nil {
			return left, fmt.Errorf("sockets left: %v (%w)", c, err)
		}
		return left, fmt.Errorf("sockets left: %v", c)
	}
	return 0, nil
}

// unixSockets counts Census's Unix sockets ("UNIX", "UNIX-STREAM").
func unixSockets(c map[string]int) int {
	n := 0
	for p, v := range c {
		if strings.HasPrefix(p, "UNIX") {
			n += v
		}
	}
	return n
}

// collectWait bounds the wait for what the kernel frees in the background
// (Unix sockets held only in flight, an MPTCP socket whose subflows are
// gone). It is paid only when a tenant left such a socket (a sweep that
// finds none returns at once), and a sweep that gives up ends the sandbox
// instead of recycling it; the kernel's worker that frees an MPTCP socket
// waited for a CPU longer than 64 ms on 2 cores at a load of 10, which
// failed recycles a little more time would have completed.
const collectWait = 500 * time.Millisecond

// collectUnixCycles starts the kernel's collection of Unix sockets only
// descriptors in flight hold: it runs when a Unix socket is released
// while any descriptor is in flight.
func collectUnixCycles() {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Close(fds[0])
	unix.Close(fds[1])
}

// destroyInet destroys every TCP and UDP socket of the namespace.
func destroyInet() error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(sockDiagTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("sock_diag timeout: %w", err)
	}
	var errs []error
	for _, k := range sweptKinds {
		ids, err := dump(fd, k)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := destroy(fd, k, id); err != nil && !errors.Is(err, ErrGone) {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sock_diag destroy: %w", errs[0])
	}
	return nil
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
