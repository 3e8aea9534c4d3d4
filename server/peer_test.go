package server

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
)

// statusFromTree starts a process tree under the server's supervisor that
// runs script (bash; URLPATH is replaced by a request line's target, HOSTPORT
// by the server's address, OUT by a file) and returns the status line the
// server answered the tree's request with.
func statusFromTree(t *testing.T, ts *testServer, script, target string) string {
	t.Helper()
	return requestFromTree(t, ts, script, "GET", target, "")
}

// requestFromTree is statusFromTree with a method and a body (plain text,
// no quote or backslash).
func requestFromTree(t *testing.T, ts *testServer, script, method, target, body string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "status")
	hostport := strings.TrimPrefix(ts.url, "http://")
	host, port, _ := net.SplitHostPort(hostport)
	head := method + ` ` + target + ` HTTP/1.1\r\nHost: x\r\nConnection: close\r\n`
	if body != "" {
		head += `Content-Type: application/json\r\nContent-Length: ` + strconv.Itoa(len(body)) + `\r\n`
	}
	request := `exec 3<>/dev/tcp/` + host + `/` + port + `; printf '` + head + `\r\n` + body + `' >&3; head -n 1 <&3 > ` + out + `.tmp; mv ` + out + `.tmp ` + out
	script = strings.ReplaceAll(script, "REQUEST", request)
	p, err := ts.sup.Start(process.Spec{Path: "bash", Args: []string{"-c", script}, Env: process.DefaultEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), 0)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(out); err == nil {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("tree %q never got an answer", script)
	return ""
}

func TestPeerCheckRefusesHarnessProcesses(t *testing.T) {
	for _, prog := range []string{"bash", "setsid", "env", "head"} {
		if _, err := exec.LookPath(prog); err != nil {
			testbin.Missing(t, "%s not installed", prog)
		}
	}
	ts := start(t, Options{})
	if m := ts.sup.Mechanisms(); m.PeerCheck != process.PeerCheckCgroup {
		testbin.Missing(t, "peer check by cgroup unavailable: %v", m.Notes)
	}
	const refused = "HTTP/1.1 403 Forbidden"
	// The tree's own process.
	if got := statusFromTree(t, ts, "REQUEST", "/metadata"); got != refused {
		t.Errorf("tree process GET /metadata: %q, want %q", got, refused)
	}
	// A child of the tree that cleared its environment and called setsid.
	if got := statusFromTree(t, ts, "setsid env -i /bin/bash -c \"REQUEST\" & wait", "/metadata"); got != refused {
		t.Errorf("scrubbed setsid child GET /metadata: %q, want %q", got, refused)
	}
	// The same child double-forked: orphaned, in a session of its own.
	if got := statusFromTree(t, ts, "setsid env -i /bin/bash -c \"( REQUEST ) & exit 0\" & wait; sleep 30", "/metadata"); got != refused {
		t.Errorf("scrubbed setsid double-forked child GET /metadata: %q, want %q", got, refused)
	}
	// The console's assets ask for no token but are closed to harnesses
	// by the same check (refusedPeer).
	if got := statusFromTree(t, ts, "REQUEST", "/web/assets/console.js"); got != refused {
		t.Errorf("tree process GET /web/assets/console.js: %q, want %q", got, refused)
	}
	// Unguarded routes pay no lookup and answer anyone.
	if got := statusFromTree(t, ts, "REQUEST", "/health"); got != "HTTP/1.1 200 OK" {
		t.Errorf("tree process GET /health: %q, want 200", got)
	}
	// The test process itself, on a kept-alive connection (the verdict is
	// cached for the second request).
	for range 2 {
		resp, err := http.Get(ts.url + "/metadata")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("test process GET /metadata: %d, want 200", resp.StatusCode)
		}
	}
}

func TestPeerCheckRefusesAPeerThatClosed(t *testing.T) {
	ts := start(t, Options{})
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The connection's peer (this test) resets it before any guarded
	// request: the lookup says not a harness, without error, and gone.
	cp := &connPeer{local: c.RemoteAddr(), remote: c.LocalAddr()}
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	ctx := context.WithValue(context.Background(), peerKey{}, cp)
	if p, ok, err := peerOf(ctx, ts.sup); !ok || err != nil || p.Harness || !p.Gone {
		t.Fatalf("peerOf(closed peer) = %+v, %v, %v; want gone, not a harness, no error", p, ok, err)
	}
}
