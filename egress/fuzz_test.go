package egress

import (
	"testing"
)

// FuzzParsePattern: any string parses or fails without a panic; a parsed
// pattern's canonical form parses to the same pattern, and a host pattern
// matches its own host on an allowed port.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"pypi.org", "*.github.com", "pypi.org:8443", "[2001:db8::1]:443", "2001:db8::1",
		"203.0.113.7", "::ffff:1.2.3.4", "*", "[", "[]:", "a..b", "*.*.x", "0x7f.1", "localhost.", "\x00", "é.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePattern(s)
		if err != nil {
			return
		}
		q, err := ParsePattern(p.String())
		if err != nil {
			t.Fatalf("%q parsed to %q, which fails: %v", s, p.String(), err)
		}
		if q != p {
			t.Fatalf("%q: %#v, reparsed %#v", s, p, q)
		}
		port := p.Port
		if port == 0 {
			port = 443
		}
		host := p.Host
		if p.Wildcard {
			host = "sub." + host
		}
		if len(host) <= 253 && !p.Matches(host, port) {
			t.Fatalf("%q does not match %s:%d", p.String(), host, port)
		}
	})
}
