package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Policy is an environment's egress allow-list: the hosts its harness may
// reach through the proxy. It is the shape of the config's
// network: {allow: [...]}; an empty Allow allows nothing.
//
// Each entry is one host pattern:
//
//   - pypi.org: that host exactly;
//   - *.github.com: any sub-domain of github.com (api.github.com,
//     a.b.github.com), not github.com itself;
//   - 203.0.113.7 or [2001:db8::7]: that IP literal exactly, and only when
//     the harness asks for the literal (a host name that resolves to it does
//     not match);
//   - any of the above with :port (pypi.org:8443) to allow that port only.
//     Without a port a pattern allows ports 80 and 443 only.
//
// Patterns are case-insensitive; a trailing dot is ignored. Whatever the
// policy says, the proxy never dials a denied address (see Options.Deny).
type Policy struct {
	Allow []string `json:"allow,omitempty" yaml:"allow,omitempty"`
}

// Pattern is one parsed host pattern of a Policy.
type Pattern struct {
	// Host is the lower-case host name without the wildcard label, or the
	// canonical text of Addr for an IP literal.
	Host string
	// Wildcard says the pattern was *.Host: it matches sub-domains of Host
	// only.
	Wildcard bool
	// Addr is the IP literal the pattern names; invalid for a host name.
	Addr netip.Addr
	// Port is the one port allowed; 0 means 80 and 443.
	Port uint16
}

// String returns the pattern in its canonical written form.
func (p Pattern) String() string {
	h := p.Host
	if p.Wildcard {
		h = "*." + h
	}
	if p.Addr.Is6() {
		h = "[" + h + "]"
	}
	if p.Port != 0 {
		h += ":" + strconv.Itoa(int(p.Port))
	}
	return h
}

// Matches reports whether the pattern allows host (as the harness wrote it:
// a name or an IP literal, without brackets) on port.
func (p Pattern) Matches(host string, port uint16) bool {
	if p.Port == 0 {
		if port != 80 && port != 443 {
			return false
		}
	} else if port != p.Port {
		return false
	}
	h, addr, err := normalizeHost(host)
	if err != nil {
		return false
	}
	if p.Addr.IsValid() || addr.IsValid() {
		return p.Addr.IsValid() && addr.IsValid() && p.Addr == addr
	}
	if p.Wildcard {
		return strings.HasSuffix(h, "."+p.Host)
	}
	return h == p.Host
}

// ParsePattern parses one host pattern (see Policy). Its error says what is
// wrong with it.
func ParsePattern(s string) (Pattern, error) {
	raw := strings.ToLower(strings.TrimSpace(s))
	switch {
	case raw == "":
		return Pattern{}, errors.New("empty host pattern")
	case strings.Contains(raw, "://"):
		return Pattern{}, errors.New("a host pattern, not a URL: write the host alone (pypi.org or pypi.org:443)")
	case strings.ContainsAny(raw, "/?#"):
		return Pattern{}, errors.New("a host pattern has no path, query or fragment")
	case strings.Contains(raw, "@"):
		return Pattern{}, errors.New("a host pattern has no user information")
	}
	host, port, err := splitPatternPort(raw)
	if err != nil {
		return Pattern{}, err
	}
	var p Pattern
	p.Port = port
	if host == "*" {
		return Pattern{}, errors.New(`"*" would allow every host: list the hosts, or use the "host" network mode to give up the network boundary`)
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.Wildcard = true
		host = rest
	}
	if strings.Contains(host, "*") {
		return Pattern{}, errors.New(`"*" is allowed only as a whole leading label ("*.example.com")`)
	}
	h, addr, err := normalizeHost(host)
	if err != nil {
		return Pattern{}, err
	}
	if addr.IsValid() {
		if p.Wildcard {
			return Pattern{}, errors.New("an IP address cannot take a wildcard")
		}
		if why := deniedBy(DefaultDeny, addr); why != "" {
			return Pattern{}, fmt.Errorf("%s is %s: never allowed", addr, why)
		}
		p.Addr = addr
		p.Host = addr.String()
		return p, nil
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return Pattern{}, fmt.Errorf("%s names this host's loopback: never allowed", h)
	}
	if p.Wildcard && !strings.Contains(h, ".") {
		return Pattern{}, fmt.Errorf("*.%s would allow a whole top-level domain: name at least two labels (*.example.com)", h)
	}
	p.Host = h
	return p, nil
}

// splitPatternPort splits an optional :port off a lower-cased pattern.
// A bare IPv6 literal (more than one colon, no brackets) has no port.
func splitPatternPort(s string) (string, uint16, error) {
	if rest, ok := strings.CutPrefix(s, "["); ok {
		addr, after, ok := strings.Cut(rest, "]")
		if !ok {
			return "", 0, errors.New(`unclosed "[" in an IPv6 literal`)
		}
		if _, err := netip.ParseAddr(addr); err != nil || !strings.Contains(addr, ":") {
			return "", 0, fmt.Errorf("%q in brackets is not an IPv6 address", addr)
		}
		if after == "" {
			return addr, 0, nil
		}
		ps, ok := strings.CutPrefix(after, ":")
		if !ok {
			return "", 0, fmt.Errorf("unexpected %q after the IPv6 literal", after)
		}
		port, err := parsePort(ps)
		return addr, port, err
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, 0, nil
	case 1:
		host, ps, _ := strings.Cut(s, ":")
		port, err := parsePort(ps)
		return host, port, err
	default:
		return s, 0, nil // a bare IPv6 literal, checked by normalizeHost
	}
}

// parsePort parses a decimal TCP port, 1 to 65535.
func parsePort(s string) (uint16, error) {
	if s == "" || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// normalizeHost returns host in lower case without a trailing dot, and its
// address when it is an IP literal (IPv4-mapped IPv6 unmapped). A host that
// is neither an IP literal nor a valid DNS name is an error.
func normalizeHost(host string) (string, netip.Addr, error) {
	h := strings.ToLower(host)
	if addr, err := netip.ParseAddr(h); err == nil {
		if addr.Zone() != "" {
			return "", netip.Addr{}, fmt.Errorf("%q: an IPv6 zone is not allowed", host)
		}
		addr = addr.Unmap()
		return addr.String(), addr, nil
	}
	h = strings.TrimSuffix(h, ".")
	if err := checkHostName(h); err != nil {
		return "", netip.Addr{}, fmt.Errorf("%q is not an IP address or a valid host name: %w", host, err)
	}
	return h, netip.Addr{}, nil
}

// checkHostName checks a lower-case DNS name: labels of 1 to 63 letters,
// digits and inner hyphens, 253 bytes in all, and a last label that starts
// with a letter (so that 0x7f.1 or 2130706433, which some resolvers read as
// IPv4 addresses, are never taken for names).
func checkHostName(h string) error {
	if h == "" {
		return errors.New("empty name")
	}
	if len(h) > 253 {
		return errors.New("longer than 253 bytes")
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" {
			return errors.New("empty label")
		}
		if len(l) > 63 {
			return fmt.Errorf("label %q is longer than 63 bytes", l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(l)-1
			if !ok {
				return fmt.Errorf("label %q: letters, digits and inner hyphens only", l)
			}
		}
	}
	if last := labels[len(labels)-1]; last[0] < 'a' || last[0] > 'z' {
		return fmt.Errorf("last label %q does not start with a letter", last)
	}
	return nil
}

// ParsePolicy checks every pattern of allow and returns the policy with each
// written in its canonical form. Its error lists every bad pattern, one per
// line, by index.
func ParsePolicy(allow []string) (Policy, error) {
	pats, err := parsePatterns(allow)
	if err != nil {
		return Policy{}, err
	}
	out := Policy{Allow: make([]string, len(pats))}
	for i, p := range pats {
		out.Allow[i] = p.String()
	}
	return out, nil
}

// Validate reports every bad pattern of the policy (nil when all are good),
// for config validation.
func (p Policy) Validate() error {
	_, err := parsePatterns(p.Allow)
	return err
}

// Patterns returns the policy's parsed patterns, or the error Validate gives.
func (p Policy) Patterns() ([]Pattern, error) {
	return parsePatterns(p.Allow)
}

// Allows reports whether some valid pattern of the policy allows host on
// port. It says nothing of addresses: the proxy also refuses denied ones.
func (p Policy) Allows(host string, port uint16) bool {
	for _, s := range p.Allow {
		if pat, err := ParsePattern(s); err == nil && pat.Matches(host, port) {
			return true
		}
	}
	return false
}

func parsePatterns(allow []string) ([]Pattern, error) {
	out := make([]Pattern, 0, len(allow))
	var errs []error
	for i, s := range allow {
		p, err := ParsePattern(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("egress: allow[%d] %q: %w", i, s, err))
			continue
		}
		out = append(out, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// matchAny reports whether one of pats allows host on port.
func matchAny(pats []Pattern, host string, port uint16) bool {
	for _, p := range pats {
		if p.Matches(host, port) {
			return true
		}
	}
	return false
}
