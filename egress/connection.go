package egress

import (
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// Connection methods.
const (
	// MethodConnect is a CONNECT tunnel (HTTPS, or any TCP stream).
	MethodConnect = "CONNECT"
	// MethodHTTP is a forwarded plain-HTTP request.
	MethodHTTP = "HTTP"
)

// Connection reports one request to the proxy: a CONNECT tunnel or one
// forwarded HTTP request, allowed or refused.
type Connection struct {
	// Method is MethodConnect or MethodHTTP.
	Method string
	// RequestMethod is the HTTP method of a forwarded request (GET, POST…);
	// "CONNECT" for a tunnel.
	RequestMethod string
	// Host and Port are the destination the harness asked for ("" and 0
	// when the request named none).
	Host string
	Port uint16
	// Allowed says the destination passed the policy and the address guard;
	// Status and Reason say whether it was then reached (the connection cap
	// or the dial may still have refused it).
	Allowed bool
	// Reason says why the request was refused or failed; "" when it went
	// through.
	Reason string
	// Status is the HTTP status the harness got: 200 for an established
	// tunnel, the upstream's status for a forwarded request, or the proxy's
	// own 4xx/5xx.
	Status int
	// Addr is the address dialled; zero when none was.
	Addr netip.AddrPort
	// Denied is the address guard's refusal (Options.Deny, DenyAddrs); nil
	// when it refused none.
	Denied *DeniedError
	// BytesUp and BytesDown count the bytes sent to and received from the
	// destination: the tunnel's payload, or a forwarded request's whole
	// upstream exchange (headers included).
	BytesUp, BytesDown int64
	// Start is when the request arrived; Duration how long it lasted
	// (a tunnel: until it closed).
	Start    time.Time
	Duration time.Duration
}

// countConn counts the bytes through a connection and ends a read that
// waits longer than idle.
type countConn struct {
	net.Conn
	idle     time.Duration
	up, down *atomic.Int64
}

func (c *countConn) Read(b []byte) (int, error) {
	if c.idle > 0 {
		_ = c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	}
	n, err := c.Conn.Read(b)
	c.down.Add(int64(n))
	return n, err
}

func (c *countConn) Write(b []byte) (int, error) {
	if c.idle > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	}
	n, err := c.Conn.Write(b)
	c.up.Add(int64(n))
	return n, err
}
