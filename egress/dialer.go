package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Dialer opens TCP connections under the proxy's address guard, for a
// connection the daemon itself makes to an address an untrusted party
// named (a task's MCP server URL): it resolves a host name itself, refuses
// the destination with a *DeniedError when any of its addresses is denied,
// and dials only the addresses it checked, each as a literal, so that a
// name resolving anew (DNS rebinding) cannot move the connection. No
// policy applies: every address the guard leaves is reachable. The zero
// value guards with DefaultDeny.
type Dialer struct {
	// Deny is the address guard, as Options.Deny (nil: DefaultDeny).
	Deny []netip.Prefix
	// DenyAddrs are refused in addition, as Options.DenyAddrs.
	DenyAddrs []netip.Addr
	// Resolve and Dial are as Options.Resolve and Options.Dial.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	Dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds resolving and dialling, each; default
	// DefaultDialTimeout.
	Timeout time.Duration
}

// DialContext connects to address (host:port) on network (tcp, tcp4 or
// tcp6) if every address of host passes the guard.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("egress: dial %s %s: only tcp is guarded", network, address)
	}
	host, ps, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("egress: dial %s: %w", address, err)
	}
	port, err := parsePort(ps)
	if err != nil {
		return nil, fmt.Errorf("egress: dial %s: %w", address, err)
	}
	h, addr, err := normalizeHost(host)
	if err != nil {
		return nil, fmt.Errorf("egress: dial %s: %w", address, err)
	}
	o := Options{Deny: d.Deny, Resolve: d.Resolve, Dial: d.Dial, DialTimeout: d.Timeout}.withDefaults()
	addrs, err := resolveChecked(ctx, o, newGuard(o.Deny, d.DenyAddrs), address, h, addr)
	if err != nil {
		return nil, err // it names address
	}
	conn, _, err := dialChecked(ctx, o, network, addrs, port)
	if err != nil {
		return nil, fmt.Errorf("egress: dial %s: %w", address, err)
	}
	return conn, nil
}
