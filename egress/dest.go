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
}

// check decides on host:port: the policy first (a refused host is never
// resolved), then the host's addresses, resolved here, every one of which
// must pass the guard.
func (p *Proxy) check(ctx context.Context, host string, port uint16) verdict {
	hp := net.JoinHostPort(host, strconv.Itoa(int(port)))
	h, addr, err := normalizeHost(host)
	if err != nil {
		return verdict{status: http.StatusBadRequest, reason: err.Error()}
	}
	if !matchAny(p.patterns, h, port) {
		return verdict{status: http.StatusForbidden, reason: hp + " is not allowed by this environment's network policy"}
	}
	addrs := []netip.Addr{addr}
	if !addr.IsValid() {
		ctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
		defer cancel()
		addrs, err = p.opts.Resolve(ctx, h)
		if err != nil {
			return verdict{status: http.StatusBadGateway, reason: fmt.Sprintf("cannot resolve %s: %v", h, err)}
		}
		if len(addrs) == 0 {
			return verdict{status: http.StatusBadGateway, reason: fmt.Sprintf("cannot resolve %s: no addresses", h)}
		}
	}
	for _, a := range addrs {
		if !a.IsValid() {
			return verdict{status: http.StatusBadGateway, reason: fmt.Sprintf("cannot resolve %s: an invalid address", h)}
		}
		if why := p.guard.check(a); why != "" {
			return verdict{status: http.StatusForbidden, reason: fmt.Sprintf("%s resolves to %s, %s: never allowed", hp, a.Unmap(), why)}
		}
	}
	return verdict{addrs: addrs}
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
