package process

import (
	"context"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// cgroupSup returns a supervisor whose peer check goes by cgroup, or skips
// (fails under CI=true) where the machine cannot give one.
func cgroupSup(t *testing.T) *Supervisor {
	t.Helper()
	for _, prog := range []string{"bash", "setsid", "env"} {
		if _, err := exec.LookPath(prog); err != nil {
			testbin.Missing(t, "%s not installed", prog)
		}
	}
	s := newSup(t, Options{})
	if m := s.Mechanisms(); m.PeerCheck != PeerCheckCgroup {
		testbin.Missing(t, "peer check by cgroup unavailable: %v", m.Notes)
	}
	return s
}

// dialFromTree starts a tree running script (bash) after PORT in it is
// replaced by ln's port, and returns the server end of the connection the
// tree makes.
func dialFromTree(t *testing.T, s *Supervisor, ln net.Listener, script string) (*Process, net.Conn) {
	t.Helper()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	p, err := s.Start(Spec{Path: "bash", Args: []string{"-c", strings.ReplaceAll(script, "PORT", port)}, Env: DefaultEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.Background(), 0) })
	return p, accept(t, ln)
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func TestPeerCheckByCgroup(t *testing.T) {
	s := cgroupSup(t)
	ln := listen(t)

	// The tree's own process.
	p, c := dialFromTree(t, s, ln, "exec 3<>/dev/tcp/127.0.0.1/PORT; sleep 30")
	peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr())
	if err != nil || !peer.Harness || peer.CgroupID == 0 || peer.CgroupID != p.leaf.id || peer.PID != p.Pid() {
		t.Fatalf("PeerOf(tree process) = %+v, %v; want harness pid %d in leaf %d", peer, err, p.Pid(), p.leaf.id)
	}

	// A grandchild that cleared its environment and left the session: the
	// marker is gone, the cgroup is not.
	_, c = dialFromTree(t, s, ln, "setsid env -i /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/PORT; sleep 30' & wait")
	if peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || !peer.Harness {
		t.Fatalf("PeerOf(scrubbed setsid grandchild) = %+v, %v; want harness", peer, err)
	}

	// The test process itself.
	mine, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	c = accept(t, ln)
	if peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || peer.Harness || peer.Gone || peer.CgroupID == 0 {
		t.Fatalf("PeerOf(test process) = %+v, %v; want a live peer that is not a harness", peer, err)
	}
	// Asked again (now from the cache of foreign cgroups): still not.
	if peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || peer.Harness {
		t.Fatalf("PeerOf(test process) again = %+v, %v", peer, err)
	}
}

func TestPeerCheckSubCgroupOfLeaf(t *testing.T) {
	s := cgroupSup(t)
	mount, _, err := findCgroup2()
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	// A tree that can write its leaf (root, in process isolation) makes a
	// sub-cgroup, moves into it, then connects. The script acts only inside
	// a daemon's leaf (exit 6 otherwise): it never makes or joins a cgroup
	// elsewhere.
	script := `cg="` + mount + `$(sed -n 's/^0:://p' /proc/self/cgroup)"; case "$cg" in */harnessd-*/*) ;; *) exit 6;; esac; mkdir "$cg/sub" && echo $$ > "$cg/sub/cgroup.procs" || exit 7; exec 3<>/dev/tcp/127.0.0.1/PORT; sleep 30`
	p, c := dialFromTree(t, s, ln, script)
	peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr())
	if err != nil || !peer.Harness || peer.CgroupID == p.leaf.id {
		t.Fatalf("PeerOf(process in a sub-cgroup of its leaf %s) = %+v, %v; want harness outside the leaf itself", filepath.Base(p.leaf.path), peer, err)
	}
}

func TestPeerCheckGonePeer(t *testing.T) {
	s := cgroupSup(t)
	ln := listen(t)
	mine, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := accept(t, ln)
	mine.(*net.TCPConn).SetLinger(0) // close with a reset: the socket is gone at once
	mine.Close()
	peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr())
	if err != nil || peer.Harness || !peer.Gone {
		t.Fatalf("PeerOf(closed peer) = %+v, %v; want gone, not a harness, no error", peer, err)
	}
	// The /proc-scan fallback says the same.
	if peer, err := PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || peer.Harness || !peer.Gone {
		t.Fatalf("PeerOf /proc scan (closed peer) = %+v, %v; want gone, not a harness, no error", peer, err)
	}
}

func TestPeerCheckWithoutCgroupFallsBackToMarker(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		testbin.Missing(t, "bash not installed")
	}
	s := newSup(t, Options{Cgroup: ModeOff})
	if m := s.Mechanisms(); m.PeerCheck != PeerCheckMarker {
		t.Fatalf("peer check without cgroup = %q, want %q", m.PeerCheck, PeerCheckMarker)
	}
	ln := listen(t)
	p, c := dialFromTree(t, s, ln, "exec 3<>/dev/tcp/127.0.0.1/PORT; sleep 30")
	if peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || !peer.Harness || peer.PID != p.Pid() {
		t.Fatalf("PeerOf(marked tree process) = %+v, %v; want harness pid %d", peer, err, p.Pid())
	}
}

func TestInetDiagMessages(t *testing.T) {
	if _, err := inetDiagRequest(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("[::1]:2")); err == nil {
		t.Error("request with mixed families built")
	}
	for _, bad := range [][]byte{nil, make([]byte, inetDiagMsgLen-1), append(make([]byte, inetDiagMsgLen), 2, 0, 21, 0)} {
		if _, err := parseInetDiagMsg(bad); err == nil {
			t.Errorf("parseInetDiagMsg(%d bytes) succeeded", len(bad))
		}
	}
}
