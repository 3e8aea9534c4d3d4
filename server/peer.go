package server

import (
	"context"
	"net"

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
// peer belongs to a process tree started by harnessd (process.PeerOf does
// the /proc lookup). A failed lookup counts as "not a harness process", as
// it always has.
func connContext(ctx context.Context, c net.Conn) context.Context {
	var v peerVerdict
	if p, err := process.PeerOf(c.LocalAddr(), c.RemoteAddr()); err == nil && p.Harness {
		v.harnessPID = p.PID
	}
	return context.WithValue(ctx, peerKey{}, v)
}

func peerOf(ctx context.Context) peerVerdict {
	v, _ := ctx.Value(peerKey{}).(peerVerdict)
	return v
}
