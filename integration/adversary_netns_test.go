package integration

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/harnessd/harnessd/internal/testbin"
)

// The orchestration port through every address of the host: the test makes
// its own "host" — a network namespace with loopback and one end of a veth
// pair (10.233.0.1/30; the other end, 10.233.0.2/30, in a second private
// namespace) — and runs the daemon there listening on 0.0.0.0, as a
// container's daemon listens on :8000. The machine's own network
// namespace is never touched: both namespaces are unnamed and end with
// their last handle (closed in t.Cleanup) and their last process.

// Addresses of the test's veth pair.
const (
	vethHost = "advh0"
	vethPeer = "advp0"
)

var (
	vethHostAddr = &net.IPNet{IP: net.IPv4(10, 233, 0, 1), Mask: net.CIDRMask(30, 32)}
	vethPeerAddr = &net.IPNet{IP: net.IPv4(10, 233, 0, 2), Mask: net.CIDRMask(30, 32)}
)

// inNetNS runs f on an OS thread switched into ns, then switches the
// thread back and unlocks it (a thread that ended instead would fire the
// parent-death signal of any child it had forked; if switching back fails
// it stays locked and ends with the goroutine, so no other goroutine ever
// runs in ns by accident).
func inNetNS(ns netns.NsHandle, f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("the thread's network namespace: %w", err)
			return
		}
		defer home.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("enter the test's network namespace: %w", err)
			return
		}
		err = f()
		if netns.Set(home) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// newNetNS makes an unnamed network namespace, closed when the test ends.
func newNetNS(t testing.TB) netns.NsHandle {
	t.Helper()
	res := make(chan error, 1)
	var ns netns.NsHandle
	go testbin.OnThrowawayThread(func() { // the thread ends in the new namespace
		var err error
		ns, err = netns.New()
		res <- err
	})
	if err := <-res; err != nil {
		t.Fatalf("create a network namespace: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// linkUp sets name up in h's namespace with addr (nil: none).
func linkUp(t testing.TB, h *netlink.Handle, name string, addr *net.IPNet) {
	t.Helper()
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatalf("find %s: %v", name, err)
	}
	if addr != nil {
		if err := h.AddrAdd(l, &netlink.Addr{IPNet: addr}); err != nil {
			t.Fatalf("address %s on %s: %v", addr, name, err)
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		t.Fatalf("set %s up: %v", name, err)
	}
}

// netHost builds the test's host namespace with its veth pair and returns
// it and its addresses (as dial hosts, link-local ones with the numeric
// zone).
func netHost(t testing.TB) (netns.NsHandle, []string) {
	t.Helper()
	host, _, addrs := netHostAndPeer(t)
	return host, addrs
}

// netHostAndPeer is netHost that also returns the peer namespace (the far
// end of the veth pair, 10.233.0.2).
func netHostAndPeer(t testing.TB) (host, peer netns.NsHandle, addrs []string) {
	t.Helper()
	host, peer = newNetNS(t), newNetNS(t)
	h, err := netlink.NewHandleAt(host)
	if err != nil {
		t.Fatalf("netlink in the test's namespace: %v", err)
	}
	defer h.Close()
	ph, err := netlink.NewHandleAt(peer)
	if err != nil {
		t.Fatalf("netlink in the peer namespace: %v", err)
	}
	defer ph.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: vethHost}, PeerName: vethPeer, PeerNamespace: netlink.NsFd(int(peer))}
	if err := h.LinkAdd(veth); err != nil {
		t.Fatalf("create the veth pair: %v", err)
	}
	linkUp(t, h, "lo", nil)
	linkUp(t, h, vethHost, vethHostAddr)
	linkUp(t, ph, "lo", nil)
	linkUp(t, ph, vethPeer, vethPeerAddr)
	list, err := h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatalf("list the namespace's addresses: %v", err)
	}
	var out []string
	for _, a := range list {
		h := a.IP.String()
		if a.IP.IsLinkLocalUnicast() {
			h += fmt.Sprintf("%%%d", a.LinkIndex)
		}
		out = append(out, h)
	}
	return host, peer, out
}

// dialInNetNS is a daemon spec's Dial that connects from inside ns.
func dialInNetNS(ns netns.NsHandle) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := inNetNS(ns, func() error {
			var err error
			conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}

// netnsDaemon starts an adversarial daemon inside ns on 0.0.0.0:0.
func netnsDaemon(t testing.TB, ns netns.NsHandle, iso string) *daemon {
	t.Helper()
	needSandbox(t)
	return startDaemon(t, spec{
		Flags: []string{"--isolation", iso, "--config", advConfig(t, iso, ""), "--listen", "0.0.0.0:0"},
		Start: func(c *exec.Cmd) error { return inNetNS(ns, c.Start) },
		Dial:  dialInNetNS(ns),
	})
}

// TestAdversaryOrchestrationPortThroughEveryAddress: the daemon listens on
// every address of its (test-made) host; the sandboxed harness tries the
// port at 127.0.0.1, the veth address and every address the namespace has:
// each is refused before any HTTP is spoken (the sandbox's network
// namespace has only its own lo). The control: a process-isolated harness
// of the same kind of daemon reaches it through the veth address.
func TestAdversaryOrchestrationPortThroughEveryAddress(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	ns, addrs := netHost(t)
	if len(addrs) < 2 {
		t.Fatalf("the test's namespace has addresses %v, want loopback and the veth's", addrs)
	}
	t.Logf("the test's host namespace has %v", addrs)
	d := netnsDaemon(t, ns, isoSandbox)
	_, port, err := net.SplitHostPort(d.Addr)
	if err != nil {
		t.Fatalf("daemon address %q: %v", d.Addr, err)
	}
	d.URL = "http://127.0.0.1:" + port
	d.Addr = "127.0.0.1:" + port
	s := openSession(t, d, isoSandbox)
	seen := map[string]bool{}
	if s.ownDoorPort(port) {
		// Loopback would reach the harness's own door.
		seen["127.0.0.1"], seen["::1"] = true, true
	}
	for _, host := range append([]string{"127.0.0.1", vethHostAddr.IP.String(), vethPeerAddr.IP.String()}, addrs...) {
		if seen[host] {
			continue
		}
		seen[host] = true
		r := s.attack("http-to", net.JoinHostPort(host, port))
		if r.OK || r.Errno == "" || strings.Contains(r.Detail, "HTTP ") {
			t.Errorf("FINDING or unexplained: the orchestration port at %s from the sandbox: %s", host, r)
		}
	}

	c := netnsDaemon(t, ns, isoProcess)
	_, cport, _ := net.SplitHostPort(c.Addr)
	c.URL, c.Addr = "http://127.0.0.1:"+cport, "127.0.0.1:"+cport
	cr := openSession(t, c, isoProcess).attack("http-to", net.JoinHostPort(vethHostAddr.IP.String(), cport))
	if cr.Errno != "" || !strings.Contains(cr.Detail, "HTTP ") {
		t.Errorf("control: a process-isolated harness did not reach the daemon through %s: %s", vethHostAddr.IP, cr)
	}
}
