// Package doorcap bounds the client connections of harnessd's doors — the
// listeners a harness reaches: its MCP bridge, its model gateway and its
// egress proxy. A door holds at most Bounds.MaxConns connections at once
// (one more is answered 503 and closed at accept), and no door ever keeps
// a connection whose file descriptor lies in the process's reserve: the
// top quarter of RLIMIT_NOFILE (at least MinReserve descriptors), which is
// left to the daemon's own listener (/health, /ready, resets) and to the
// episodes' other descriptors. Since the kernel hands out the lowest free
// descriptor, an accepted connection numbered inside the reserve means the
// table below it is full: doors refuse it, and the reserve stays free of
// door connections however many doors flood at once. It also raises the
// process's RLIMIT_NOFILE soft limit to the hard limit (RaiseNOFILE).
//
// A door's request bodies are bounded together as well (Budget): each is
// capped by its door (the gateway's 32 MiB, the bridge's 8 MiB), and the
// bytes of all the bodies a door is reading or handling at once by its
// budget (by default twice the door's body cap: 64 MiB for the gateway,
// 16 MiB for the bridge); a body the budget has no room for is refused at
// once (*BodyBudgetError, ReasonBodies), and one not read whole within
// DefaultBodyReadTimeout (30 s) is dropped (*BodyTimeoutError), so a
// stalled body gives its bytes back.
//
// It owns only listeners, the connections they hand out and the budget of
// their request bodies: what a door serves (HTTP servers, handlers, their
// timeouts' use), how it answers a refused body, which episode it belongs
// to and what to record of a refusal are the callers'. It must not touch
// sessions, sandboxes or namespaces.
package doorcap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of Bounds.
const (
	// DefaultMaxConns is the connections one door holds at once: far more
	// than an agent uses (a handful of keep-alive connections and streams),
	// few enough that thousands of episodes' doors fit under a raised
	// RLIMIT_NOFILE.
	DefaultMaxConns = 256
	// DefaultIdleTimeout closes a keep-alive connection idle this long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultReadHeaderTimeout closes a connection that has not sent a
	// request's whole header this long after it opened (or after its
	// previous request, once idle).
	DefaultReadHeaderTimeout = 10 * time.Second
	// MinReserve is the fewest descriptors doors leave to the process.
	MinReserve = 64
)

// Bounds bound one door's client connections. Zero fields mean the
// defaults.
type Bounds struct {
	// MaxConns caps the connections the door holds at once, across all its
	// listeners; default DefaultMaxConns.
	MaxConns int
	// IdleTimeout closes a keep-alive connection idle this long; default
	// DefaultIdleTimeout. It is the HTTP server's IdleTimeout.
	IdleTimeout time.Duration
	// ReadHeaderTimeout bounds reading a request's header; default
	// DefaultReadHeaderTimeout. It is the HTTP server's ReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// BodyBytes bounds the bytes of request bodies the door holds at once,
	// across its connections (a Budget); zero means the door's own default
	// (the model gateway's and the bridge's: twice their largest body).
	// WithDefaults leaves it alone.
	BodyBytes int64
	// BodyReadTimeout bounds reading one request body whole; zero means
	// DefaultBodyReadTimeout, negative none (NewBudget). WithDefaults
	// leaves it alone.
	BodyReadTimeout time.Duration
}

// WithDefaults returns b with every zero or negative connection field
// (MaxConns, IdleTimeout, ReadHeaderTimeout) set to its default.
func (b Bounds) WithDefaults() Bounds {
	if b.MaxConns <= 0 {
		b.MaxConns = DefaultMaxConns
	}
	if b.IdleTimeout <= 0 {
		b.IdleTimeout = DefaultIdleTimeout
	}
	if b.ReadHeaderTimeout <= 0 {
		b.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	return b
}

// Refusal reasons, as Stats counts them and the 503 says.
const (
	// ReasonCap: the door holds MaxConns connections already.
	ReasonCap = "door_connection_cap"
	// ReasonReserve: the process is within its descriptor reserve.
	ReasonReserve = "fd_reserve"
)

// Limit is one door's connection cap, shared by every listener it wraps.
// Create it with NewLimit; it is safe for concurrent use.
type Limit struct {
	max  int
	door string
	log  *slog.Logger

	open       atomic.Int64
	refusedCap atomic.Uint64
	refusedFD  atomic.Uint64
}

// NewLimit returns the limit of a door named door (for the logs and the
// refusals) capped at b.MaxConns (default DefaultMaxConns). log receives
// refusals: the first of each reason at warn, later ones at debug when
// their count reaches a power of two; nil discards them.
func NewLimit(b Bounds, door string, log *slog.Logger) *Limit {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	Expect(door, ReasonCap, ReasonReserve)
	return &Limit{max: b.WithDefaults().MaxConns, door: door, log: log}
}

// Stats counts a door's connections.
type Stats struct {
	// Open is the connections held now.
	Open int
	// RefusedCap and RefusedReserve count the connections refused at
	// accept because the door was full, or the process within its
	// descriptor reserve.
	RefusedCap, RefusedReserve uint64
}

// Stats returns the door's counts now.
func (l *Limit) Stats() Stats {
	return Stats{Open: int(l.open.Load()), RefusedCap: l.refusedCap.Load(), RefusedReserve: l.refusedFD.Load()}
}

// Max returns the cap.
func (l *Limit) Max() int { return l.max }

// Listen wraps ln: its Accept hands out only connections within the cap
// and outside the descriptor reserve, and answers every other one with a
// 503 (the doors speak HTTP/1.1) and closes it. Closing the wrapper closes
// ln.
func (l *Limit) Listen(ln net.Listener) net.Listener { return &listener{Listener: ln, l: l} }

type listener struct {
	net.Listener
	l *Limit
}

// Accept returns the next connection the door may hold; refused ones are
// closed here, so a flood costs the process one descriptor at a time.
func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if why := ln.l.admit(c); why != "" {
			ln.l.refuse(c, why)
			continue
		}
		return &conn{Conn: c, l: ln.l}, nil
	}
}

// admit takes a slot for c, or says why not.
func (l *Limit) admit(c net.Conn) string {
	if fd, ok := fdOf(c); ok {
		if _, threshold, err := Reserve(); err == nil && uint64(fd) >= threshold {
			return ReasonReserve
		}
	}
	if l.open.Add(1) > int64(l.max) {
		l.open.Add(-1)
		return ReasonCap
	}
	return ""
}

// refuse answers c with a 503 naming why and closes it.
func (l *Limit) refuse(c net.Conn, why string) {
	var n uint64
	var msg string
	CountRefusal(l.door, why)
	switch why {
	case ReasonCap:
		n = l.refusedCap.Add(1)
		msg = fmt.Sprintf("harnessd: the %s door holds its cap of %d connections", l.door, l.max)
	default:
		n = l.refusedFD.Add(1)
		limit, threshold, _ := Reserve()
		msg = fmt.Sprintf("harnessd: the daemon keeps descriptors %d-%d of its limit %d in reserve", threshold, limit-1, limit)
	}
	// A fresh connection's send buffer is empty: the write does not wait;
	// the deadline only guards against a peer that never reads.
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	body := msg + " (" + why + ")\n"
	_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"X-Harnessd-Refused: "+why+"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	c.Close()
	switch {
	case n == 1:
		l.log.Warn("door refused a connection", "door", l.door, "reason", why, "detail", msg, "open", l.open.Load())
	case n&(n-1) == 0:
		l.log.Debug("door refusing connections", "door", l.door, "reason", why, "refused", n, "open", l.open.Load())
	}
}

// conn gives its slot back when closed, once.
type conn struct {
	net.Conn
	l      *Limit
	closed sync.Once
}

// Close gives the slot back before closing, so that a peer that sees the
// connection end can count on the slot being free.
func (c *conn) Close() error {
	c.closed.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// CloseWrite half-closes the connection when the underlying one can (a
// tunnel relays a FIN).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// ReadFrom and WriteTo keep the underlying connection's splice between two
// TCP connections (a tunnel's io.Copy) through the wrapper.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// WriteTo: see ReadFrom.
func (c *conn) WriteTo(w io.Writer) (int64, error) {
	if wt, ok := c.Conn.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.Copy(w, struct{ io.Reader }{c.Conn})
}

// fdOf returns c's descriptor when it has one.
func fdOf(c net.Conn) (int, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd := -1
	if raw.Control(func(f uintptr) { fd = int(f) }) != nil || fd < 0 {
		return 0, false
	}
	return fd, true
}

// ErrReserve is GuardDial's error for a connection that would have held a
// descriptor of the process's reserve.
var ErrReserve = errors.New("the daemon is within its descriptor reserve")

// DialFunc dials like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// GuardDial wraps dial for the connections a door's requests open (an
// egress tunnel's upstream, a tool server's HTTP connection): one that
// lands on a descriptor of the process's reserve is closed and the dial
// fails with ErrReserve, so that what doors cause stays out of the reserve
// like the doors' own connections. Other connections pass unwrapped.
func GuardDial(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if fd, ok := fdOf(c); ok {
			if limit, threshold, err := Reserve(); err == nil && uint64(fd) >= threshold {
				c.Close()
				return nil, fmt.Errorf("dial %s: %w (descriptor %d of %d, the reserve starts at %d)", addr, ErrReserve, fd, limit, threshold)
			}
		}
		return c, nil
	}
}

// ReserveFor returns how many descriptors doors leave to the process at a
// soft limit of n: a quarter, at least MinReserve (never more than n).
func ReserveFor(n uint64) uint64 {
	r := max(n/4, MinReserve)
	return min(r, n)
}

// Reserve returns the process's RLIMIT_NOFILE soft limit now and the
// lowest descriptor doors refuse to keep (limit - ReserveFor(limit)). It
// reads the limit on every call, so a limit changed from outside
// (prlimit) counts at the next accept.
func Reserve() (limit, threshold uint64, err error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, fmt.Errorf("doorcap: getrlimit(RLIMIT_NOFILE): %w", err)
	}
	return r.Cur, r.Cur - ReserveFor(r.Cur), nil
}

// NOFILE is the process's descriptor limit around RaiseNOFILE.
type NOFILE struct {
	// Was is the soft limit before; Soft and Hard are the limits after.
	Was, Soft, Hard uint64
}

// RaiseNOFILE raises the process's RLIMIT_NOFILE soft limit to its hard
// limit (the Go runtime usually has already). It uses prlimit(2) rather
// than syscall.Setrlimit, which would make os/exec's children inherit the
// raised limit: they keep the limit the process started with.
func RaiseNOFILE() (NOFILE, error) {
	var r unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &r); err != nil {
		return NOFILE{}, fmt.Errorf("doorcap: read RLIMIT_NOFILE: %w", err)
	}
	n := NOFILE{Was: r.Cur, Soft: r.Cur, Hard: r.Max}
	if r.Cur >= r.Max {
		return n, nil
	}
	raised := unix.Rlimit{Cur: r.Max, Max: r.Max}
	if err := unix.Prlimit(0, unix.RLIMIT_NOFILE, &raised, nil); err != nil {
		return n, fmt.Errorf("doorcap: raise RLIMIT_NOFILE from %d to %d: %w", r.Cur, r.Max, err)
	}
	n.Soft = r.Max
	return n, nil
}
