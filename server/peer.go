package server

import (
	"context"
	"net"
	"sync"

	"github.com/harnessd/harnessd/process"
)

// peerKey carries a connection's peer record in its context.
type peerKey struct{}

// connPeer is the peer of one accepted connection. Accepting records only
// the addresses; the lookup (process.Supervisor.PeerOf) runs on the first
// request to a guarded route, in that request's goroutine, and its verdict
// is kept for the rest of the connection: a socket's cgroup and its holder's
// tree do not change while it is open. Unguarded routes (/health, /ready)
// and connections that never reach a guarded route never pay for it.
type connPeer struct {
	local, remote net.Addr
	once          sync.Once
	peer          process.Peer
	err           error
}

// connContext runs for every accepted connection (http.Server.ConnContext)
// and only notes the connection's addresses.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, &connPeer{local: c.LocalAddr(), remote: c.RemoteAddr()})
}

// peerOf returns the verdict for the connection that carried ctx, looking
// it up with sup on the first call. ok is false for a context without a
// connection record (a handler served outside Serve, as in unit tests).
func peerOf(ctx context.Context, sup *process.Supervisor) (p process.Peer, ok bool, err error) {
	cp, _ := ctx.Value(peerKey{}).(*connPeer)
	if cp == nil {
		return process.Peer{}, false, nil
	}
	cp.once.Do(func() { cp.peer, cp.err = sup.PeerOf(cp.local, cp.remote) })
	return cp.peer, true, cp.err
}
