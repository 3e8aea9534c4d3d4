package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParsePatternGood(t *testing.T) {
	cases := map[string]string{
		"pypi.org":              "pypi.org",
		" PyPI.org. ":           "pypi.org",
		"*.github.com":          "*.github.com",
		"pypi.org:8443":         "pypi.org:8443",
		"*.example.co.uk:443":   "*.example.co.uk:443",
		"203.0.113.7":           "203.0.113.7",
		"203.0.113.7:8080":      "203.0.113.7:8080",
		"2001:db8::7":           "[2001:db8::7]",
		"[2001:DB8::7]:443":     "[2001:db8::7]:443",
		"::ffff:203.0.113.7":    "203.0.113.7",
		"xn--bcher-kva.example": "xn--bcher-kva.example",
		"a-b.c-d.example":       "a-b.c-d.example",
	}
	for in, want := range cases {
		p, err := ParsePattern(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if p.String() != want {
			t.Errorf("%q: parsed as %q, want %q", in, p.String(), want)
		}
	}
}

func TestParsePatternBad(t *testing.T) {
	cases := map[string]string{
		"":                                   "empty",
		"https://pypi.org":                   "not a URL",
		"pypi.org/simple":                    "no path",
		"user@pypi.org":                      "user information",
		"*":                                  "every host",
		"*:443":                              "every host",
		"*.com":                              "whole top-level domain",
		"a.*.com":                            "leading label",
		"*pypi.org":                          "leading label",
		"pypi.org:0":                         "1 to 65535",
		"pypi.org:65536":                     "1 to 65535",
		"pypi.org:http":                      "1 to 65535",
		"pypi.org:":                          "1 to 65535",
		"127.0.0.1":                          "loopback",
		"[::1]:443":                          "loopback",
		"169.254.169.254":                    "link-local",
		"0.0.0.0":                            "unspecified",
		"224.0.0.1":                          "multicast",
		"*.10.0.0.1":                         "cannot take a wildcard",
		"localhost":                          "loopback",
		"api.localhost":                      "loopback",
		"-bad.example":                       "inner hyphens",
		"bad_.example":                       "inner hyphens",
		"a..example":                         "empty label",
		"2130706433":                         "last label",
		"0x7f.1":                             "last label",
		"[2001:db8::1":                       "unclosed",
		"[pypi.org]":                         "not an IPv6",
		"[2001:db8::1]x":                     "unexpected",
		"fe80::1%eth0":                       "zone is not allowed",
		strings.Repeat("a", 64) + ".example": "longer than 63",
	}
	for in, want := range cases {
		_, err := ParsePattern(in)
		if err == nil {
			t.Errorf("%q: accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %q does not say %q", in, err, want)
		}
	}
}

func TestPatternMatches(t *testing.T) {
	cases := []struct {
		pattern, host string
		port          uint16
		want          bool
	}{
		{"pypi.org", "pypi.org", 443, true},
		{"pypi.org", "PYPI.ORG.", 80, true},
		{"pypi.org", "pypi.org", 22, false},
		{"pypi.org", "files.pypi.org", 443, false},
		{"pypi.org:8443", "pypi.org", 8443, true},
		{"pypi.org:8443", "pypi.org", 443, false},
		{"*.github.com", "api.github.com", 443, true},
		{"*.github.com", "a.b.github.com", 443, true},
		{"*.github.com", "github.com", 443, false},
		{"*.github.com", "evilgithub.com", 443, false},
		{"*.github.com", "github.com.evil.example", 443, false},
		{"203.0.113.7", "203.0.113.7", 443, true},
		{"203.0.113.7", "::ffff:203.0.113.7", 443, true},
		{"203.0.113.7", "203.0.113.8", 443, false},
		{"2001:db8::7", "2001:DB8:0::7", 443, true},
		{"pypi.org", "203.0.113.7", 443, false},
		{"203.0.113.7", "pypi.org", 443, false},
		{"pypi.org", "bad host", 443, false},
	}
	for _, tc := range cases {
		p, err := ParsePattern(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Matches(tc.host, tc.port); got != tc.want {
			t.Errorf("%s matches %s:%d = %v, want %v", tc.pattern, tc.host, tc.port, got, tc.want)
		}
	}
}

// TestValidateListsEveryBadPattern: config validation gets one line per bad
// pattern, with its index, and the good ones canonicalised by ParsePolicy.
func TestValidateListsEveryBadPattern(t *testing.T) {
	err := Policy{Allow: []string{"pypi.org", "https://x.example", "*.github.com", "127.0.0.1"}}.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `egress: allow[1] "https://x.example": `) || !strings.HasPrefix(lines[1], `egress: allow[3] "127.0.0.1": `) {
		t.Fatalf("%q", err)
	}
	if _, err := New(Options{Policy: Policy{Allow: []string{"*"}}}); err == nil || !strings.Contains(err.Error(), "every host") {
		t.Fatalf("New with *: %v", err)
	}
	p, err := ParsePolicy([]string{"PyPI.org.", "[2001:db8::1]"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Allow, " ") != "pypi.org [2001:db8::1]" {
		t.Fatalf("%v", p.Allow)
	}
	if !p.Allows("pypi.org", 443) || p.Allows("pypi.org", 8080) {
		t.Fatal("Allows")
	}
	if err := (Policy{}).Validate(); err != nil {
		t.Fatalf("empty policy: %v", err)
	}
}

// TestGuard: the default prefixes, PrivatePrefixes when added, and
// DenyAddrs, with IPv4-mapped forms unmapped.
func TestGuard(t *testing.T) {
	g := newGuard(append(append([]netip.Prefix{}, DefaultDeny...), PrivatePrefixes...), []netip.Addr{netip.MustParseAddr("198.51.100.9"), netip.MustParseAddr("10.9.9.9")})
	cases := map[string]string{
		"127.0.0.1": "loopback", "127.255.0.9": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"0.0.0.0": "unspecified", "::": "unspecified", "::7f00:1": "IPv4-compatible",
		"169.254.169.254": "link-local", "fe80::1": "link-local", "fd00:ec2::254": "metadata",
		"224.0.0.251": "multicast", "ff02::1": "multicast", "255.255.255.255": "broadcast",
		"10.1.2.3": "private", "192.168.1.1": "private", "172.31.0.1": "private", "100.64.0.1": "carrier-grade",
		"fd12::1": "unique-local", "198.51.100.9": "daemon's own", "::ffff:198.51.100.9": "daemon's own",
		"10.9.9.9":    "daemon's own", // private too, but never allowed
		"203.0.113.7": "", "2001:db8::1": "", "172.32.0.1": "",
	}
	for a, want := range cases {
		got, private := g.check(netip.MustParseAddr(a))
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", a, got, want)
		}
		// Private only where no other rule refuses it.
		if wantPrivate := IsPrivate(netip.MustParseAddr(a)) && !strings.Contains(want, "own"); private != wantPrivate {
			t.Errorf("%s: private %v, want %v", a, private, wantPrivate)
		}
	}
}
