package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// The control channel is a SOCK_SEQPACKET socketpair: one JSON message per
// sequence of packets, each packet prefixed with 'm' (more follows) or 'e'
// (end), so a message is not bounded by the socket buffer. File
// descriptors travel with the last packet.
const (
	packetSize     = 32 << 10
	maxMessageSize = 16 << 20
	maxFDs         = 64
)

// Message types.
const (
	msgSpec    = "spec"    // host -> init: initSpec
	msgReady   = "ready"   // init -> host: the sandbox is set up; doors attached
	msgGo      = "go"      // host -> init: start the harness (Command)
	msgStarted = "started" // init -> host: the harness was executed
	msgExit    = "exit"    // init -> host: the harness's exit status
	msgError   = "error"   // init -> host: setup or exec failed; exec stage -> init
	msgExec    = "exec"    // init -> exec stage: execSpec, the harness's stdio attached
)

// message is every control message; fields by type.
type message struct {
	Type    string       `json:"type"`
	Spec    *initSpec    `json:"spec,omitempty"`
	Doors   []doorOpened `json:"doors,omitempty"`
	Command *Command     `json:"command,omitempty"`
	Exec    *execSpec    `json:"exec,omitempty"`
	// Stdio names the harness stdio files attached to a go message, in
	// order ("stdin", "stdout", "stderr").
	Stdio  []string `json:"stdio,omitempty"`
	Pid    int      `json:"pid,omitempty"`
	Code   int      `json:"code,omitempty"`
	Signal string   `json:"signal,omitempty"`
	Stage  string   `json:"stage,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// doorOpened reports one door; its fd is the i-th attached.
type doorOpened struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// controlPair makes the socketpair; both ends are close-on-exec.
func controlPair() (host, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("control socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "sandbox-control"), os.NewFile(uintptr(fds[1]), "sandbox-control-init"), nil
}

// controlConn wraps f (which it takes over) as a packet connection that
// uses the runtime poller.
func controlConn(f *os.File) (*net.UnixConn, error) {
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

// send writes m with fds attached.
func send(c *net.UnixConn, m message, fds ...int) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s message: %w", m.Type, err)
	}
	if len(b) > maxMessageSize {
		return fmt.Errorf("%s message of %d bytes exceeds %d", m.Type, len(b), maxMessageSize)
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
			return fmt.Errorf("send %s message: %w", m.Type, err)
		}
		b = b[n:]
		if flag == 'e' {
			return nil
		}
	}
}

// errClosed is returned by receive when the peer closed the channel.
var errClosed = errors.New("control channel closed")

// receive reads one message and the files attached to it.
func receive(c *net.UnixConn) (message, []*os.File, error) {
	var m message
	var body []byte
	var files []*os.File
	buf := make([]byte, packetSize+1)
	oob := make([]byte, unix.CmsgSpace(4*maxFDs))
	for {
		n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
		if errors.Is(err, io.EOF) {
			closeAll(files)
			return m, nil, errClosed
		}
		if err != nil {
			closeAll(files)
			return m, nil, fmt.Errorf("receive control message: %w", err)
		}
		if oobn > 0 {
			fs, perr := parseRights(oob[:oobn])
			files = append(files, fs...)
			if perr != nil {
				closeAll(files)
				return m, nil, perr
			}
		}
		if n == 0 {
			closeAll(files)
			return m, nil, errClosed
		}
		if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			closeAll(files)
			return m, nil, errors.New("control message truncated")
		}
		body = append(body, buf[1:n]...)
		if len(body) > maxMessageSize {
			closeAll(files)
			return m, nil, fmt.Errorf("control message exceeds %d bytes", maxMessageSize)
		}
		if buf[0] == 'e' {
			break
		}
	}
	if err := json.Unmarshal(body, &m); err != nil {
		closeAll(files)
		return m, nil, fmt.Errorf("decode control message: %w", err)
	}
	return m, files, nil
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

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
