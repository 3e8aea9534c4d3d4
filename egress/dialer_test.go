package egress

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

// The Dialer is the proxy's guard for the daemon's own connections: a name
// that resolves to loopback (or one of several addresses that does) or a
// loopback literal is refused with a DeniedError and never dialled; with no
// prefixes denied (the control) the same name is dialled, at the address
// that was checked.
func TestDialerRefusesWhatTheGuardDenies(t *testing.T) {
	port := echoServer(t)
	h := &hosts{m: map[string][]netip.Addr{
		"rebind.test": loop("127.0.0.1"),
		"mixed.test":  {netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("127.0.0.1")},
	}}
	var dl dialer
	d := &Dialer{Resolve: h.resolve, Dial: dl.dial}
	for _, target := range []string{"rebind.test:" + port, "mixed.test:" + port, "127.0.0.1:" + port, "[::ffff:127.0.0.1]:" + port, "169.254.169.254:80"} {
		_, err := d.DialContext(t.Context(), "tcp", target)
		var denied *DeniedError
		if !errors.As(err, &denied) || denied.Dest != target {
			t.Errorf("%s: %v, want a DeniedError naming it", target, err)
		}
	}
	if got := dl.dials(); len(got) != 0 {
		t.Fatalf("denied destinations were dialled: %v", got)
	}
	open := &Dialer{Deny: []netip.Prefix{}, Resolve: h.resolve, Dial: dl.dial}
	c, err := open.DialContext(t.Context(), "tcp", "rebind.test:"+port)
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	c.Close()
	if got := dl.dials(); !slices.Equal(got, []string{"127.0.0.1:" + port}) {
		t.Errorf("control dialled %v, want the checked literal only", got)
	}
}
