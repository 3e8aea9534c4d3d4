package session

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/wire"
)

// openEgress serves the episode's egress proxy on its sandbox's egress
// door (network.egress: allow): the hosts of network.allow, never the
// host's own addresses; every connection becomes an egress event.
func (s *Session) openEgress(ep *episode) error {
	if ep.sandbox == nil || s.cfg.Network.EgressPolicy() != config.EgressAllow {
		return nil
	}
	ln := ep.door(doorEgress)
	if ln == nil {
		return fmt.Errorf("egress proxy: the sandbox has no %s door", doorEgress)
	}
	p, err := egress.New(egress.Options{
		Policy:       egress.Policy{Allow: s.cfg.Network.Allow},
		DenyAddrs:    hostAddrs(),
		OnConnection: func(c egress.Connection) { s.onEgress(ep, c) },
		Logger:       ep.log,
	})
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	if err := p.Serve(ln); err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	ep.egress, ep.egressAddr = p, ln.Addr().String()
	return nil
}

// closeEgress ends the episode's proxy and its tunnels.
func (s *Session) closeEgress(ctx context.Context, ep *episode) {
	if ep.egress == nil {
		return
	}
	if err := ep.egress.Close(ctx); err != nil {
		ep.log.Debug("egress proxy closed", "err", err)
	}
	ep.egress = nil
}

func (s *Session) onEgress(ep *episode, c egress.Connection) {
	e := &wire.Egress{
		Method: c.Method, Host: c.Host, Port: int(c.Port), Allowed: c.Allowed, Reason: c.Reason, Status: c.Status,
		BytesUp: c.BytesUp, BytesDown: c.BytesDown, DurationMS: float64(c.Duration.Microseconds()) / 1000,
	}
	if c.Addr.IsValid() {
		e.Address = c.Addr.String()
	}
	s.emit(ep, wire.New(wire.OriginDaemon, e))
}

// hostAddrs are the host's own interface addresses, which the proxy never
// lets a harness reach (the daemon may listen on any of them).
func hostAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		out = append(out, p.Addr())
	}
	return out
}
