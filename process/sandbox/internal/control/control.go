// Package control frames the messages of a sandbox's control channel: a
// SOCK_SEQPACKET socketpair between the daemon and a sandbox's init,
// carrying one JSON value per message and the file descriptors attached
// to it. It knows nothing of what the messages mean (package
// process/sandbox defines them) and touches no process state.
package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// A message is one JSON value sent as a sequence of packets, each
// prefixed with 'm' (more follows) or 'e' (end), so that a message is not
// bounded by the socket buffer; its file descriptors travel with the last
// packet.
const (
	packetSize     = 32 << 10
	maxMessageSize = 16 << 20
	maxFDs         = 64
)

// Pair makes the socketpair; both ends are close-on-exec.
func Pair() (host, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("control socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "sandbox-control"), os.NewFile(uintptr(fds[1]), "sandbox-control-init"), nil
}

// Conn wraps f (which it takes over) as a packet connection that uses the
// runtime poller.
func Conn(f *os.File) (*net.UnixConn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("control connection: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("control connection is not a unix socket")
	}
	return uc, nil
}

// Send writes v as one message with fds attached.
func Send(c *net.UnixConn, v any, fds ...int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if len(b) > maxMessageSize {
		return fmt.Errorf("%d bytes exceed %d", len(b), maxMessageSize)
	}
	for {
		n := min(len(b), packetSize)
		flag := byte('m')
		var oob []byte
		if n == len(b) {
			flag = 'e'
			if len(fds) > 0 {
				oob = unix.UnixRights(fds...)
			}
		}
		pkt := append([]byte{flag}, b[:n]...)
		if _, _, err := c.WriteMsgUnix(pkt, oob, nil); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		b = b[n:]
		if flag == 'e' {
			return nil
		}
	}
}

// ErrClosed is returned by Receive when the peer closed the channel.
var ErrClosed = errors.New("control channel closed")

// packetBuffer is what Receive reads one packet into; packetBuffers keeps
// them between messages (a sandbox's start and each run take several,
// and a fresh 32 KiB each time showed in the daemon's profile as page
// faults).
type packetBuffer struct{ data, oob []byte }

var packetBuffers = sync.Pool{New: func() any {
	return &packetBuffer{data: make([]byte, packetSize+1), oob: make([]byte, unix.CmsgSpace(4*maxFDs))}
}}

// Receive reads one message into v and returns the files attached to it,
// which are the caller's (close-on-exec).
func Receive(c *net.UnixConn, v any) ([]*os.File, error) {
	var body []byte
	var files []*os.File
	bufs := packetBuffers.Get().(*packetBuffer)
	defer packetBuffers.Put(bufs)
	buf, oob := bufs.data, bufs.oob
	for {
		n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
		if errors.Is(err, io.EOF) {
			CloseAll(files)
			return nil, ErrClosed
		}
		if err != nil {
			CloseAll(files)
			return nil, fmt.Errorf("receive control message: %w", err)
		}
		if oobn > 0 {
			fs, perr := parseRights(oob[:oobn])
			files = append(files, fs...)
			if perr != nil {
				CloseAll(files)
				return nil, perr
			}
		}
		if n == 0 {
			CloseAll(files)
			return nil, ErrClosed
		}
		if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			CloseAll(files)
			return nil, errors.New("control message truncated")
		}
		body = append(body, buf[1:n]...)
		if len(body) > maxMessageSize {
			CloseAll(files)
			return nil, fmt.Errorf("control message exceeds %d bytes", maxMessageSize)
		}
		if buf[0] == 'e' {
			break
		}
	}
	if err := json.Unmarshal(body, v); err != nil {
		CloseAll(files)
		return nil, fmt.Errorf("decode control message: %w", err)
	}
	return files, nil
}

func parseRights(oob []byte) ([]*os.File, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse control message rights: %w", err)
	}
	var files []*os.File
	for _, cm := range msgs {
		fds, err := unix.ParseUnixRights(&cm)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "sandbox-door"))
		}
	}
	return files, nil
}

// CloseAll closes every file of files.
func CloseAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
