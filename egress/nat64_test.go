package egress

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

// TestGuardRefusesNAT64FormsOfDeniedAddresses (an outside red team): the
// address guard checks IPv4-mapped IPv6 (::ffff:a.b.c.d,
// unmapped) and IPv4-compatible (::/96) forms, but not the NAT64
// well-known prefix 64:ff9b::/96 (RFC 6052) nor the local-use 64:ff9b:1::/48
// (RFC 8215), through which an IPv6-only host with NAT64 (AWS, GCP and
// Kubernetes IPv6-only clusters, DNS64 resolvers) reaches the embedded IPv4
// address: 64:ff9b::a9fe:a9fe is cloud metadata, 64:ff9b::a00:1 is 10.0.0.1
// (PrivatePrefixes, denied to a task's MCP url), and a DNS64 resolver
// synthesizes exactly these AAAA records for an allowed name whose A record is
// private or link-local. The control: the same IPv4 addresses in the mapped
// form are refused and never dialled.
func TestGuardRefusesNAT64FormsOfDeniedAddresses(t *testing.T) {
	h := &hosts{m: map[string][]netip.Addr{
		// what DNS64 answers for a name whose only A record is 169.254.169.254
		"dns64-metadata.test":  {netip.MustParseAddr("64:ff9b::a9fe:a9fe")},
		"mapped-metadata.test": {netip.MustParseAddr("::ffff:169.254.169.254")},
	}}
	dl := &dialer{nowhere: true}
	// The guard of a task's MCP url (episode.taskDialer without task_mcp_private).
	d := &Dialer{Deny: slices.Concat(DefaultDeny, PrivatePrefixes), Resolve: h.resolve, Dial: dl.dial}

	// Control: the mapped forms are refused before any dial.
	for _, target := range []string{"[::ffff:169.254.169.254]:80", "[::ffff:10.0.0.1]:80", "mapped-metadata.test:80"} {
		var denied *DeniedError
		if _, err := d.DialContext(t.Context(), "tcp", target); !errors.As(err, &denied) {
			t.Fatalf("control %s: %v, want a DeniedError", target, err)
		}
	}
	if got := dl.addrs; len(got) != 0 {
		t.Fatalf("control: dialled %v", got)
	}

	for _, target := range []string{
		"[64:ff9b::a9fe:a9fe]:80",       // 169.254.169.254, cloud metadata
		"[64:ff9b::7f00:1]:80",          // 127.0.0.1
		"[64:ff9b::a00:1]:80",           // 10.0.0.1
		"[64:ff9b:1::a00:1]:80",         // local-use NAT64 prefix
		"[64:ff9b:1:a9fe:a9:fe00::]:80", // the same after a /48 prefix (around the u octet)
		"[2002:a9fe:a9fe::1]:80",        // 6to4
		"dns64-metadata.test:80",        // a name a DNS64 resolver answered
	} {
		var denied *DeniedError
		_, err := d.DialContext(t.Context(), "tcp", target)
		if !errors.As(err, &denied) {
			t.Errorf("%s: %v, want a DeniedError (a NAT64 form of a denied IPv4 address)", target, err)
		}
	}
	if got := dl.addrs; len(got) != 0 {
		t.Errorf("the guard let these NAT64 addresses be dialled: %v", got)
	}
	// The control of the fix: a NAT64 form of a public address is dialled.
	if _, err := d.DialContext(t.Context(), "tcp", "[64:ff9b::808:808]:80"); errors.As(err, new(*DeniedError)) || len(dl.addrs) != 1 {
		t.Errorf("64:ff9b::808:808 (8.8.8.8): %v, dialled %v; want it dialled", err, dl.addrs)
	}
}
