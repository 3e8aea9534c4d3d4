// Package egress is harnessd's egress door: an HTTP(S) forward proxy that
// lets a sandboxed harness tree reach the hosts its environment's network
// policy allows, and nothing else.
//
// It owns:
//
//   - the policy (Policy, ParsePolicy, Validate): host patterns — an exact
//     host (pypi.org), a leading wildcard that matches sub-domains only
//     (*.github.com), an IP literal that matches only itself, each with an
//     optional :port (without one a pattern allows ports 80 and 443 only).
//   - the proxy (Proxy): CONNECT host:port tunnels for HTTPS and
//     absolute-URI forwarding for plain HTTP (GET http://host/path), with
//     hop-by-hop headers and Proxy-Authorization never forwarded. A host
//     outside the policy gets 403 with a plain-text reason and no dial.
//   - the address guard: the proxy resolves each destination itself, refuses
//     it when any of its addresses is denied (loopback, unspecified,
//     link-local including cloud metadata, multicast, broadcast, and every
//     address in Options.DenyAddrs — the daemon's own listeners and host
//     addresses), and dials exactly the address it checked, so there is no
//     second resolution and no DNS-rebinding window.
//   - the bounds: a cap on concurrent upstream connections, a cap on the
//     harness's client connections (a door's, package doorcap), a header
//     read timeout, an idle timeout on tunnels and client connections, and
//     a report of every request (Connection, through Options.OnConnection).
//
// It must not touch sessions, events, sandboxes or namespaces: the caller
// opens the listener (inside the harness's network namespace), hands it to
// Serve, sets the harness's HTTP_PROXY variables, and turns each Connection
// into whatever record it keeps.
package egress
