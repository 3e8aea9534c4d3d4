package sandbox

import (
	"fmt"
	"net"
	"os"

	"github.com/harnessd/harnessd/process/sandbox/internal/control"
)

// The control channel carries one message (JSON) and the descriptors
// attached to it per sequence of packets (package internal/control).

// Message types.
const (
	msgSpec    = "spec"    // host -> init: initSpec
	msgReady   = "ready"   // init -> host: the sandbox is set up (or recycled); doors attached
	msgGo      = "go"      // host -> init: start the harness (Command)
	msgStarted = "started" // init -> host: the harness was executed
	msgExit    = "exit"    // init -> host: the harness's exit status
	msgError   = "error"   // init -> host: setup, exec or a recycle failed
	msgRecycle = "recycle" // host -> init: back to new for a later tenant (ready or error follows)
)

// message is every control message; fields by type.
type message struct {
	Type    string       `json:"type"`
	Spec    *initSpec    `json:"spec,omitempty"`
	Doors   []doorOpened `json:"doors,omitempty"`
	Command *Command     `json:"command,omitempty"`
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

// send writes m with fds attached.
func send(c *net.UnixConn, m message, fds ...int) error {
	if err := control.Send(c, m, fds...); err != nil {
		return fmt.Errorf("%s message: %w", m.Type, err)
	}
	return nil
}

// errClosed is returned by receive when the peer closed the channel.
var errClosed = control.ErrClosed

// receive reads one message and the files attached to it.
func receive(c *net.UnixConn) (message, []*os.File, error) {
	var m message
	files, err := control.Receive(c, &m)
	return m, files, err
}
