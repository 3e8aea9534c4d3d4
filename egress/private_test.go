package egress

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestDenyListRefusesPrivateUnlessAllowed: the daemon's guard
// (DenyList(false)) refuses an allowed name that resolves into a private
// or shared range, or a NAT64 form of one, never dials it, and reports the
// refused address (Connection.Denied); a public address of the same list
// is dialled. The control: DenyList(true) dials every one of them.
func TestDenyListRefusesPrivateUnlessAllowed(t *testing.T) {
	private := map[string]netip.Addr{
		"rfc1918.test": netip.MustParseAddr("10.1.2.3"),
		"pods.test":    netip.MustParseAddr("172.20.0.9"),
		"home.test":    netip.MustParseAddr("192.168.1.1"),
		"cgnat.test":   netip.MustParseAddr("100.64.0.7"),
		"ula.test":     netip.MustParseAddr("fd12:3456::1"),
		"dns64.test":   netip.MustParseAddr("64:ff9b::a01:203"), // 10.1.2.3 through NAT64
	}
	h := &hosts{m: map[string][]netip.Addr{"public.test": {netip.MustParseAddr("192.0.2.10")}}}
	allow := []string{"public.test"}
	for name, a := range private {
		h.m[name] = []netip.Addr{a}
		allow = append(allow, name)
		if !IsPrivate(a) {
			t.Fatalf("IsPrivate(%s) = false", a)
		}
	}
	if IsPrivate(netip.MustParseAddr("192.0.2.10")) || IsPrivate(netip.MustParseAddr("64:ff9b::808:808")) {
		t.Fatal("IsPrivate of a public address")
	}
	connect := func(allowPrivate bool, name string) (*httptest.ResponseRecorder, Connection, []string) {
		d := &dialer{nowhere: true}
		rep := newReports()
		p, err := New(Options{Policy: Policy{Allow: allow}, Deny: DenyList(allowPrivate), Resolve: h.resolve, Dial: d.dial, OnConnection: rep.add})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(t.Context())
		w := httptest.NewRecorder()
		p.ServeHTTP(w, &http.Request{Method: http.MethodConnect, Host: name + ":443", URL: &url.URL{Host: name + ":443"}, Header: http.Header{}})
		return w, rep.next(t), d.dials()
	}
	for name, a := range private {
		w, c, dials := connect(false, name)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "resolves to "+a.String()) || len(dials) != 0 {
			t.Errorf("%s without allow_private: %d %q, dialled %v", name, w.Code, w.Body.String(), dials)
		}
		if c.Allowed || c.Denied == nil || c.Denied.Addr != a || !c.Denied.Private || !strings.Contains(w.Body.String(), "unless the environment allows private addresses") {
			t.Errorf("%s: report %+v (denied %+v), want Denied %s, private", name, c, c.Denied, a)
		}
		// Control: allowed, the same name is dialled.
		if _, c, dials := connect(true, name); len(dials) != 1 || c.Denied != nil {
			t.Errorf("%s with allow_private: dialled %v, report %+v", name, dials, c)
		}
	}
	if _, c, dials := connect(false, "public.test"); len(dials) != 1 || c.Denied != nil {
		t.Errorf("public.test: dialled %v, report %+v", dials, c)
	}
	if !slices.Equal(DenyList(true), DefaultDeny) || len(DenyList(false)) != len(DefaultDeny)+len(PrivatePrefixes) {
		t.Fatalf("DenyList: %v / %v", DenyList(true), DenyList(false))
	}
}
