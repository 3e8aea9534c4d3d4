package egress

import (
	"net"
	"net/netip"
	"slices"
)

// DefaultDeny is the address guard applied when Options.Deny is nil: the
// ranges a harness must never reach through the proxy whatever the policy
// says. IPv4-mapped IPv6 addresses are unmapped before the check, and the
// IPv4 address a NAT64 or 6to4 one embeds is checked too (embeddedIPv4).
var DefaultDeny = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),        // loopback
	netip.MustParsePrefix("::1/128"),            // loopback
	netip.MustParsePrefix("0.0.0.0/8"),          // unspecified / "this network" (0.0.0.0 reaches this host)
	netip.MustParsePrefix("::/128"),             // unspecified
	netip.MustParsePrefix("::/96"),              // IPv4-compatible IPv6 (deprecated; ::127.0.0.1)
	netip.MustParsePrefix("169.254.0.0/16"),     // link-local, including cloud metadata (169.254.169.254)
	netip.MustParsePrefix("fe80::/10"),          // link-local
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata over IPv6
	netip.MustParsePrefix("224.0.0.0/4"),        // multicast
	netip.MustParsePrefix("ff00::/8"),           // multicast
	netip.MustParsePrefix("255.255.255.255/32"), // limited broadcast
}

// PrivatePrefixes are the private and shared ranges (RFC 1918, carrier-grade
// NAT, IPv6 unique-local) that DefaultDeny leaves reachable, since an
// allowed internal mirror may live there. The daemon refuses them too
// unless the environment allows them (DenyList).
var PrivatePrefixes = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("fc00::/7"),
}

// DenyList is the address guard of a daemon's proxy: DefaultDeny and, unless
// allowPrivate, PrivatePrefixes (a pod or service network, another host of
// the cluster). The result is a new slice.
func DenyList(allowPrivate bool) []netip.Prefix {
	if allowPrivate {
		return slices.Clone(DefaultDeny)
	}
	return slices.Concat(DefaultDeny, PrivatePrefixes)
}

// IsPrivate reports whether addr, or an IPv4 address it embeds (NAT64,
// 6to4), falls in PrivatePrefixes.
func IsPrivate(addr netip.Addr) bool {
	return deniedBy(PrivatePrefixes, addr) != ""
}

// prefixReasons names the ranges of DefaultDeny for refusal messages.
var prefixReasons = map[netip.Prefix]string{
	netip.MustParsePrefix("127.0.0.0/8"):        "a loopback address",
	netip.MustParsePrefix("::1/128"):            "a loopback address",
	netip.MustParsePrefix("0.0.0.0/8"):          "an unspecified address",
	netip.MustParsePrefix("::/128"):             "an unspecified address",
	netip.MustParsePrefix("::/96"):              "an IPv4-compatible IPv6 address",
	netip.MustParsePrefix("169.254.0.0/16"):     "a link-local address",
	netip.MustParsePrefix("fe80::/10"):          "a link-local address",
	netip.MustParsePrefix("fd00:ec2::254/128"):  "a cloud metadata address",
	netip.MustParsePrefix("224.0.0.0/4"):        "a multicast address",
	netip.MustParsePrefix("ff00::/8"):           "a multicast address",
	netip.MustParsePrefix("255.255.255.255/32"): "a broadcast address",
	netip.MustParsePrefix("10.0.0.0/8"):         "a private address",
	netip.MustParsePrefix("172.16.0.0/12"):      "a private address",
	netip.MustParsePrefix("192.168.0.0/16"):     "a private address",
	netip.MustParsePrefix("100.64.0.0/10"):      "a shared (carrier-grade NAT) address",
	netip.MustParsePrefix("fc00::/7"):           "a unique-local address",
}

// deniedBy returns why addr falls in one of deny ("" when it does not),
// or why an IPv4 address it embeds does (embeddedIPv4: NAT64, 6to4).
func deniedBy(deny []netip.Prefix, addr netip.Addr) string {
	addr = addr.Unmap()
	if why := deniedDirectly(deny, addr); why != "" {
		return why
	}
	for _, v4 := range embeddedIPv4(addr) {
		if why := deniedDirectly(deny, v4); why != "" {
			return "an IPv6 form (NAT64, 6to4) of " + v4.String() + ", " + why
		}
	}
	return ""
}

// deniedDirectly returns why addr itself falls in one of deny, or "".
func deniedDirectly(deny []netip.Prefix, addr netip.Addr) string {
	for _, p := range deny {
		if p.Contains(addr) {
			if why, ok := prefixReasons[p]; ok {
				return why
			}
			return "in the denied range " + p.String()
		}
	}
	return ""
}

// The IPv6 prefixes through which a network reaches an IPv4 address it
// embeds: NAT64's well-known 64:ff9b::/96 (RFC 6052, what a DNS64 resolver
// answers for a name with only an A record) and local-use 64:ff9b:1::/48
// (RFC 8215), and 6to4's 2002::/16.
var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	nat64LocalUse  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 is the IPv4 addresses addr may reach through NAT64 or
// 6to4: the last 32 bits under 64:ff9b::/96; under 64:ff9b:1::/48 both
// places RFC 6052 puts them (after a /48 prefix, around the u octet; after
// a /96 one, the last 32 bits), since the operator picks the length; bits
// 16 to 48 under 2002::/16.
func embeddedIPv4(addr netip.Addr) []netip.Addr {
	if !addr.Is6() {
		return nil
	}
	b := addr.As16()
	v4 := func(x, y, z, w byte) netip.Addr { return netip.AddrFrom4([4]byte{x, y, z, w}) }
	switch {
	case nat64WellKnown.Contains(addr):
		return []netip.Addr{v4(b[12], b[13], b[14], b[15])}
	case nat64LocalUse.Contains(addr):
		return []netip.Addr{v4(b[6], b[7], b[9], b[10]), v4(b[12], b[13], b[14], b[15])}
	case sixToFour.Contains(addr):
		return []netip.Addr{v4(b[2], b[3], b[4], b[5])}
	}
	return nil
}

// guard is the proxy's address check: the deny prefixes and the exact
// addresses of Options.DenyAddrs.
type guard struct {
	prefixes []netip.Prefix
	addrs    map[netip.Addr]bool
}

func newGuard(prefixes []netip.Prefix, addrs []netip.Addr) guard {
	g := guard{prefixes: make([]netip.Prefix, 0, len(prefixes)), addrs: make(map[netip.Addr]bool, len(addrs))}
	for _, p := range prefixes {
		g.prefixes = append(g.prefixes, p.Masked())
	}
	for _, a := range addrs {
		g.addrs[a.Unmap().WithZone("")] = true
	}
	return g
}

// check returns why addr must not be dialled ("" when it may be), and
// whether that is only its falling in PrivatePrefixes.
func (g guard) check(addr netip.Addr) (why string, private bool) {
	addr = addr.Unmap().WithZone("")
	why = deniedBy(g.prefixes, addr)
	if why != "" && !IsPrivate(addr) {
		return why, false // the range says more (a loopback address is also the host's own)
	}
	if g.addrs[addr] {
		return "one of the daemon's own addresses", false
	}
	for _, v4 := range embeddedIPv4(addr) {
		if g.addrs[v4] {
			return "an IPv6 form (NAT64, 6to4) of one of the daemon's own addresses", false
		}
	}
	return why, why != ""
}

// HostAddrs are this host's own interface addresses, for Options.DenyAddrs:
// a daemon may listen on any of them, so no proxy it runs may reach them.
// nil when they cannot be listed.
func HostAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out
}
