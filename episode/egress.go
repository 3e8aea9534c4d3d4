package episode

import (
	"context"
	"fmt"

	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/wire"
)

// openEgress serves the episode's egress proxy on its sandbox's egress
// door (network.egress: allow): the hosts of network.allow, never the
// host's own addresses nor, unless network.allow_private, private ones;
// every connection becomes an egress event.
func (ep *Episode) openEgress() error {
	opts := ep.env.Config.Network.EgressOptions()
	if ep.sandbox == nil || opts == nil {
		return nil
	}
	ln := ep.door(doorEgress)
	if ln == nil {
		return fmt.Errorf("egress proxy: the sandbox has no %s door", doorEgress)
	}
	opts.OnConnection, opts.Logger = ep.onEgress, ep.Log()
	p, err := egress.New(*opts)
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
	switch {
	case c.Addr.IsValid():
		e.Address = c.Addr.String()
	case c.Denied != nil:
		e.Address = c.Denied.Addr.String()
		if c.Denied.Private {
			e.Reason += privateHint
			ep.warnPrivateOnce.Do(func() {
				ep.Log().Warn("the egress proxy refused a private address an allowed host resolves to",
					"host", c.Host, "address", c.Denied, "knob", "network.allow_private")
			})
		}
	}
	ep.emit(wire.New(wire.OriginDaemon, e))
}

// privateHint ends the reason of an egress event refused for a private
// address: the knob that allows one.
const privateHint = " (network.allow_private: true lets the egress proxy reach private addresses, an internal mirror's)"
