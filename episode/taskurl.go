package episode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/egress"
)

// taskHTTPSource is the source of a task's mcp_servers url. A task
// dataset is untrusted, and the daemon dials the URL from the host's
// network, so the connection goes through the egress proxy's address
// guard (egress.Dialer): never loopback, link-local (cloud metadata),
// multicast, private ranges or this host's own addresses, unless
// network.task_mcp_private lifts loopback, private and the host's own.
// An operator's tools: url entries are configuration and dial freely.
func (e *Env) taskHTTPSource(tc config.ToolConfig) bridge.Source {
	d := taskDialer(e.Config.Network.TaskMCPPrivate)
	return bridge.NewHTTPSource(bridge.HTTPSpec{
		Name: tc.Name, URL: tc.URL, Headers: tc.Headers, CallTimeout: tc.CallTimeout.D(),
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if denied := (*egress.DeniedError)(nil); errors.As(err, &denied) {
				e.Logger.Warn("refused a task's MCP server address", "tool", tc.Name, "url", tc.URL, "err", err,
					"knob", "network.task_mcp_private")
				return nil, fmt.Errorf("a task's MCP server: %w (network.task_mcp_private: true allows loopback, private and this host's addresses)", err)
			}
			return c, err
		},
	}, e.Logger)
}

// taskDialer is the guard of a task's MCP url: the egress proxy's, with
// the private ranges too (no allow-list narrows what a task names), or,
// with private set, all but loopback.
func taskDialer(private bool) *egress.Dialer {
	if private {
		deny := slices.DeleteFunc(slices.Clone(egress.DefaultDeny), func(p netip.Prefix) bool { return p.Addr().IsLoopback() })
		return &egress.Dialer{Deny: deny}
	}
	return &egress.Dialer{Deny: egress.DenyList(false), DenyAddrs: egress.HostAddrs()}
}
