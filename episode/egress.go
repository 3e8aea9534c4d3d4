package episode

import (
	"context"
	"fmt"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/wire"
)

// openEgress serves the episode's egress proxy on its sandbox's egress
// door (network.egress: allow): the hosts of network.allow, never the
// host's own addresses; every connection becomes an egress event.
func (ep *Episode) openEgress() error {
	if ep.sandbox == nil || ep.env.Config.Network.EgressPolicy() != config.EgressAllow {
		return nil
	}
	ln := ep.door(doorEgress)
	if ln == nil {
		return fmt.Errorf("egress proxy: the sandbox has no %s door", doorEgress)
	}
	p, err := egress.New(egress.Options{
		Policy:       egress.Policy{Allow: ep.env.Config.Network.Allow},
		DenyAddrs:    egress.HostAddrs(),
		OnConnection: ep.onEgress,
		Logger:       ep.Log(),
	})
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	if err := p.Serve(ln); err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	ep.egress, ep.egressAddr = p, ln.Addr().String()
	ep.undo.push(ResourceEgress, func(ctx context.Context) error {
		if err := p.Close(ctx); err != nil {
			ep.Log().Debug("egress proxy closed", "err", err)
		}
		return nil
	})
	return nil
}

func (ep *Episode) onEgress(c egress.Connection) {
	e := &wire.Egress{
		Method: c.Method, Host: c.Host, Port: int(c.Port), Allowed: c.Allowed, Reason: c.Reason, Status: c.Status,
		BytesUp: c.BytesUp, BytesDown: c.BytesDown, DurationMS: float64(c.Duration.Microseconds()) / 1000,
	}
	if c.Addr.IsValid() {
		e.Address = c.Addr.String()
	}
	ep.emit(wire.New(wire.OriginDaemon, e))
}
