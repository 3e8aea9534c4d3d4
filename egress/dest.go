package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
)

// verdict is the outcome of checking a destination: the addresses it may be
// dialled at, or the status and reason of its refusal.
type verdict struct {
	addrs  []netip.Addr
	status int
	reason string
	denied *DeniedError // the guard's refusal, if it refused
	slot   bool         // a connection slot was taken (check)
}

// take decides on host:port and takes a connection slot for it: the
// policy first (a refused host is never resolved), then a slot (so that a
// lookup, up to DialTimeout and a socket of its own, counts against
// MaxConnections like the connection it is for), then the host's
// addresses, resolved here, every one of which must pass the guard. On a
// verdict without a reason the caller holds the slot and releases it.
func (p *Proxy) take(ctx context.Context, host string, port uint16) verdict {
	v := p.check(ctx, host, port)
	if v.reason != "" && v.slot {
		p.release()
	}
	return v
}

// check is take's work; slot says a slot was taken.
func (p *Proxy) check(ctx context.Context, host string, port uint16) verdict {
	hp := net.JoinHostPort(host, strconv.Itoa(int(port)))
	h, addr, err := normalizeHost(host)
	if err != nil {
		return verdict{status: http.StatusBadRequest, reason: err.Error()}
	}
	if !matchAny(p.patterns, h, port) {
		return verdict{status: http.StatusForbidden, reason: hp + " is not allowed by this environment's network policy"}
	}
	if !p.acquire() {
		return verdict{status: http.StatusServiceUnavailable, reason: p.tooMany()}
	}
	v := verdict{slot: true}
	addrs, err := resolveChecked(ctx, p.opts, p.guard, hp, h, addr)
	var denied *DeniedError
	switch {
	case errors.As(err, &denied):
		v.status, v.reason, v.denied = http.StatusForbidden, err.Error(), denied
	case err != nil:
		v.status, v.reason = http.StatusBadGateway, err.Error()
	default:
		v.addrs = addrs
	}
	return v
}

// DeniedError is a destination refused by the address guard: one of the
// addresses it resolves to (or the literal it is) is denied.
type DeniedError struct {
	// Dest is the destination as asked, host:port.
	Dest string
	// Addr is the denied address.
	Addr netip.Addr
	// Why names the range or set it falls in ("a loopback address").
	Why string
	// Private says it was refused only for falling in PrivatePrefixes
	// (DenyList without allowPrivate), which a configuration may allow.
	Private bool
}

// Error implements error.
func (e *DeniedError) Error() string {
	verdict := "never allowed"
	if e.Private {
		verdict = "refused unless the environment allows private addresses"
	}
	return fmt.Sprintf("%s resolves to %s, %s: %s", e.Dest, e.Addr.Unmap(), e.Why, verdict)
}

// resolveChecked returns the addresses of h (hp is host:port as asked;
// addr is h's address when h is an IP literal), resolved under
// o.DialTimeout, every one of which passes g; else a *DeniedError naming
// the first denied one, or the lookup's failure.
func resolveChecked(ctx context.Context, o Options, g guard, hp, h string, addr netip.Addr) ([]netip.Addr, error) {
	addrs := []netip.Addr{addr}
	if !addr.IsValid() {
		ctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
		defer cancel()
		var err error
		if addrs, err = o.Resolve(ctx, h); err != nil {
			return nil, fmt.Errorf("cannot resolve %s: %w", h, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("cannot resolve %s: no addresses", h)
		}
	}
	for _, a := range addrs {
		if !a.IsValid() {
			return nil, fmt.Errorf("cannot resolve %s: an invalid address", h)
		}
		if why, private := g.check(a); why != "" {
			return nil, &DeniedError{Dest: hp, Addr: a.Unmap(), Why: why, Private: private}
		}
	}
	return addrs, nil
}

// dial connects to port on the first of addrs that answers. Every address
// was checked by check, and each is dialled as a literal: nothing is
// resolved again.
func (p *Proxy) dial(ctx context.Context, addrs []netip.Addr, port uint16) (net.Conn, netip.AddrPort, error) {
	return dialChecked(ctx, p.opts, "tcp", addrs, port)
}

// dialChecked dials port on the first of addrs (each checked, dialled as a
// literal) that answers, under o.DialTimeout.
func dialChecked(ctx context.Context, o Options, network string, addrs []netip.Addr, port uint16) (net.Conn, netip.AddrPort, error) {
	ctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	var errs []error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a.Unmap(), port)
		conn, err := o.Dial(ctx, network, ap.String())
		if err == nil {
			return conn, ap, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.AddrPort{}, fmt.Errorf("cannot connect: %w", errors.Join(errs...))
}
