package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
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
// own host namespace; the destination is the far end of its veth pair.
func TestEgressAllowThroughTheProxy(t *testing.T) {
	needSandbox(t)
	host, peer, _ := netHostAndPeer(t)
	port := peerServer(t, peer)
	allowed := fmt.Sprintf("%s:%d", vethPeerAddr.IP, port)
	// The host's own veth address is listed too: the proxy's address guard
	// must refuse it anyway.
	own := fmt.Sprintf("%s:%d", vethHostAddr.IP, port)
	cfg := advConfig(t, isoSandbox, fmt.Sprintf("network:\n  egress: allow\n  allow: [%q, %q]\n", allowed, own))
	d := startDaemon(t, spec{
		Flags: []string{"--isolation", isoSandbox, "--config", cfg, "--listen", "0.0.0.0:0"},
		Start: func(c *exec.Cmd) error { return inNetNS(host, c.Start) },
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var conn net.Conn
			err := inNetNS(host, func() error {
				var err error
				conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return conn, err
		},
	})
	_, dport, err := net.SplitHostPort(d.Addr)
	if err != nil {
		t.Fatalf("daemon address %q: %v", d.Addr, err)
	}
	d.URL, d.Addr = "http://127.0.0.1:"+dport, "127.0.0.1:"+dport
	s := openSession(t, d, isoSandbox)
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
