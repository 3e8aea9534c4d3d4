package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/harnessd/harnessd/internal/testbin"
)

// peerServer serves a small HTTP endpoint inside the veth peer's network
// namespace (10.233.0.2): a destination outside the daemon's host that
// only the egress proxy can take a sandboxed harness to.
func peerServer(t *testing.T, peer netns.NsHandle) (port int) {
	t.Helper()
	var ln net.Listener
	if err := inNetNS(peer, func() error {
		var err error
		ln, err = net.Listen("tcp4", vethPeerAddr.IP.String()+":0")
		return err
	}); err != nil {
		t.Fatalf("listen in the peer namespace: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from the peer, %s", r.URL.Path)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// TestEgressAllowThroughTheProxy: with network.egress: allow, a sandboxed
// harness reaches an allowed host:port through the daemon's proxy (its
// only way out), is refused another port of the same host, and every
// connection is an egress event of the turn. The daemon runs in the test's
// own host namespace; the destination is the far end of its veth pair, a
// private address (network.allow_private).
func TestEgressAllowThroughTheProxy(t *testing.T) {
	needSandbox(t)
	host, peer, _ := netHostAndPeer(t)
	port := peerServer(t, peer)
	allowed := fmt.Sprintf("%s:%d", vethPeerAddr.IP, port)
	// The host's own veth address is listed too: the proxy's address guard
	// must refuse it anyway.
	own := fmt.Sprintf("%s:%d", vethHostAddr.IP, port)
	s := egressSession(t, host, "", fmt.Sprintf("network:\n  egress: allow\n  allow_private: true\n  allow: [%q, %q]\n", allowed, own))
	if p := s.env("HTTPS_PROXY"); !strings.HasPrefix(p, "http://127.0.0.1:") {
		t.Fatalf("HTTPS_PROXY %q", p)
	}
	obs := s.step("attack http-get http://" + allowed + "/through")
	r := attackOf(t, obs)
	if !r.OK || !strings.Contains(r.Detail, "hello from the peer, /through") {
		t.Fatalf("the allowed destination through the proxy: %s", r)
	}
	if e := egressEvent(t, obs); e["allowed"] != true || e["host"] != vethPeerAddr.IP.String() || e["method"] != "HTTP" {
		t.Fatalf("egress event %v", e)
	}
	other := fmt.Sprintf("http://%s:%d/", vethPeerAddr.IP, port+1)
	obs = s.step("attack http-get " + other)
	if r := attackOf(t, obs); r.OK || !strings.Contains(r.Detail, "403") {
		t.Fatalf("a port not in network.allow: %s", r)
	}
	if e := egressEvent(t, obs); e["allowed"] != false || e["reason"] == nil {
		t.Fatalf("refused egress event %v", e)
	}
	// The daemon's own address is never a destination, whatever the
	// policy: the proxy refuses the host's veth address.
	obs = s.step("attack http-get http://" + own + "/")
	if r := attackOf(t, obs); r.OK || strings.Contains(r.Detail, "network policy") {
		t.Fatalf("the host's own address through the proxy: %s", r)
	}
}

// TestEgressRefusesAPrivateAddressUnlessAllowed: an allowed name that
// resolves into a private range (here the veth peer, 10.233.0.2, through
// the daemon's /etc/hosts: what a wildcard's subdomain or DNS the harness
// steers can do in a cluster) is refused by default, with an egress event
// naming the address and the knob; the control, the same name with
// network.allow_private: true, is reached.
func TestEgressRefusesAPrivateAddressUnlessAllowed(t *testing.T) {
	needSandbox(t)
	host, peer, _ := netHostAndPeer(t)
	port := peerServer(t, peer)
	const name = "mirror.internal.test"
	hosts := fmt.Sprintf("127.0.0.1 localhost\n%s %s\n", vethPeerAddr.IP, name)
	target := fmt.Sprintf("http://%s:%d/", name, port)
	for _, allowPrivate := range []bool{true, false} {
		s := egressSession(t, host, hosts, fmt.Sprintf("network:\n  egress: allow\n  allow_private: %v\n  allow: [\"%s:%d\"]\n", allowPrivate, name, port))
		obs := s.step("attack http-get " + target)
		r, e := attackOf(t, obs), egressEvent(t, obs)
		if allowPrivate {
			if !r.OK || !strings.Contains(r.Detail, "hello from the peer") || e["allowed"] != true {
				t.Fatalf("control, allow_private: %s; event %v", r, e)
			}
			continue
		}
		reason, _ := e["reason"].(string)
		if r.OK || !strings.Contains(r.Detail, "403") || e["allowed"] != false || e["address"] != vethPeerAddr.IP.String() ||
			!strings.Contains(reason, "network.allow_private") {
			t.Fatalf("a private address by default: %s; event %v", r, e)
		}
	}
}

// egressSession starts a sandboxed daemon with config extra in the test's
// host network namespace (with hosts, when given, as its /etc/hosts, in a
// mount namespace of its own) and opens a session.
func egressSession(t *testing.T, host netns.NsHandle, hosts, extra string) *advSession {
	t.Helper()
	cfg := advConfig(t, isoSandbox, extra)
	start := func(c *exec.Cmd) error { return inNetNS(host, c.Start) }
	if hosts != "" {
		start = func(c *exec.Cmd) error {
			withHostsFile(t, c, hosts)
			return inNetNS(host, c.Start)
		}
	}
	d := startDaemon(t, spec{
		Flags: []string{"--isolation", isoSandbox, "--config", cfg, "--listen", "0.0.0.0:0"},
		Start: start,
		Dial:  dialInNetNS(host),
	})
	_, dport, err := net.SplitHostPort(d.Addr)
	if err != nil {
		t.Fatalf("daemon address %q: %v", d.Addr, err)
	}
	d.URL, d.Addr = "http://127.0.0.1:"+dport, "127.0.0.1:"+dport
	return openSession(t, d, isoSandbox)
}

// withHostsFile makes c run in a mount namespace of its own where hosts is
// bound over /etc/hosts: c's program is started through unshare(1) and a
// shell that binds the file and execs it (the same pid, so c's signals
// reach it). Done in a process of its own, not on a thread of the test's:
// a locked thread that unshared its mount namespace and ended could be
// the main thread, which Go keeps, and /proc/self/mountinfo follows the
// main thread (the SIGKILL tests' unmounting of a killed daemon's disks
// then saw the other namespace's mounts and left theirs busy).
func withHostsFile(t *testing.T, c *exec.Cmd, hosts string) {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		testbin.Missing(t, "unshare(1) (util-linux): %v", err)
	}
	file := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(file, []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Args = append([]string{"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
		`mount --bind "$0" /etc/hosts && exec "$@"`, file, c.Path}, c.Args[1:]...)
	c.Path = unshare
}

func attackOf(t *testing.T, obs map[string]any) attackResult {
	t.Helper()
	var r attackResult
	if err := json.Unmarshal([]byte(responseOf(t, obs)), &r); err != nil {
		t.Fatalf("not an attack result: %q", responseOf(t, obs))
	}
	t.Logf("%s", r)
	return r
}

func egressEvent(t *testing.T, obs map[string]any) map[string]any {
	t.Helper()
	evs, _ := meta(t, obs)["turn_events"].([]any)
	for _, e := range evs {
		m, _ := e.(map[string]any)
		if m["type"] == "egress" {
			if m["source"] != "daemon" {
				t.Fatalf("egress event from %v", m["source"])
			}
			return m["data"].(map[string]any)
		}
	}
	t.Fatalf("no egress event in the turn: %v", evs)
	return nil
}
