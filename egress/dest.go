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
	slot   bool // a connection slot was taken (check)
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
	addrs := []netip.Addr{addr}
	if !addr.IsValid() {
		ctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
		defer cancel()
		addrs, err = p.opts.Resolve(ctx, h)
		if err != nil {
			v.status, v.reason = http.StatusBadGateway, fmt.Sprintf("cannot resolve %s: %v", h, err)
			return v
		}
		if len(addrs) == 0 {
			v.status, v.reason = http.StatusBadGateway, fmt.Sprintf("cannot resolve %s: no addresses", h)
			return v
		}
	}
	for _, a := range addrs {
		if !a.IsValid() {
			v.status, v.reason = http.StatusBadGateway, fmt.Sprintf("cannot resolve %s: an invalid address", h)
			return v
		}
		if why := p.guard.check(a); why != "" {
			v.status, v.reason = http.StatusForbidden, fmt.Sprintf("%s resolves to %s, %s: never allowed", hp, a.Unmap(), why)
			return v
		}
	}
	v.addrs = addrs
	return v
}

// dial connects to port on the first of addrs that answers. Every address
// was checked by check, and each is dialled as a literal: nothing is
// resolved again.
func (p *Proxy) dial(ctx context.Context, addrs []netip.Addr, port uint16) (net.Conn, netip.AddrPort, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
	defer cancel()
	var errs []error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a.Unmap(), port)
		conn, err := p.opts.Dial(ctx, "tcp", ap.String())
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
