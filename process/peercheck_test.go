package process

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/internal/cgtree"
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
	if err != nil || !peer.Harness || peer.CgroupID == 0 || peer.CgroupID != p.leaf.ID || peer.PID != p.Pid() {
		t.Fatalf("PeerOf(tree process) = %+v, %v; want harness pid %d in leaf %d", peer, err, p.Pid(), p.leaf.ID)
	}

	// A grandchild that cleared its environment and left the session: the
	// marker is gone, the cgroup is not.
	_, c = dialFromTree(t, s, ln, "setsid env -i /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/PORT; sleep 30' & wait")
	if peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || !peer.Harness {
		t.Fatalf("PeerOf(scrubbed setsid grandchild) = %+v, %v; want harness", peer, err)
	}

	// The same, double-forked: the connecting subshell is orphaned, in a
	// session and group of its own, with an empty environment.
	_, c = dialFromTree(t, s, ln, "setsid env -i /bin/bash -c '( exec 3<>/dev/tcp/127.0.0.1/PORT; sleep 30 ) & exit 0' & wait; sleep 30")
	if peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || !peer.Harness || peer.Escaped {
		t.Fatalf("PeerOf(scrubbed setsid double-forked grandchild) = %+v, %v; want harness by cgroup", peer, err)
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
	mount, _, _, err := cgtree.DefaultRoot()
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
	if err != nil || !peer.Harness || peer.CgroupID == p.leaf.ID {
		t.Fatalf("PeerOf(process in a sub-cgroup of its leaf %s) = %+v, %v; want harness outside the leaf itself", filepath.Base(p.leaf.Path), peer, err)
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
	if peer, err := newSup(t, Options{Cgroup: ModeOff}).PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || peer.Harness || !peer.Gone {
		t.Fatalf("PeerOf by ancestry (closed peer) = %+v, %v; want gone, not a harness, no error", peer, err)
	}
}

// waitFile waits for a tree's script to create path (it says where the
// script has got to); it fails the test after a minute.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
	}
}

// A member that moves itself into a cgroup outside the daemon's directory
// (root in process isolation can) makes its sockets there: the cgroup id
// says "not ours". Once the tracker has seen it as a member, the lookup
// still finds it (Escaped), and Stop kills it although its leaf is empty.
func TestPeerCheckCatchesMemberThatLeftItsCgroup(t *testing.T) {
	s := cgroupSup(t)
	// The cgroup to move into: made by this test beside the daemon's
	// directory, under a name that is not a daemon's, and removed by it.
	elsewhere := filepath.Join(filepath.Dir(s.cg.Parent()), "peercheck-test-"+newTreeID())
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		testbin.Missing(t, "cannot make a cgroup beside the daemon's: %v", err)
	}
	ln := listen(t)
	dir := t.TempDir()
	ready, goFile, pidFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go"), filepath.Join(dir, "pid")
	script := `( until [ -e ` + goFile + ` ]; do sleep 0.01; done; echo $BASHPID > ` + pidFile + `; echo $BASHPID > ` + elsewhere + `/cgroup.procs || exit 7; exec 3<>/dev/tcp/127.0.0.1/` +
		strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + `; sleep 30 ) & : > ` + ready + `; wait; sleep 30`
	p, err := s.Start(Spec{Path: "bash", Args: []string{"-c", script}, Env: DefaultEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	t.Cleanup(func() {
		p.Stop(context.Background(), 0)
		if !removed && os.Remove(elsewhere) != nil {
			// Only if Stop missed the escapee: end it through the cgroup
			// this test made, then remove that.
			os.WriteFile(filepath.Join(elsewhere, "cgroup.kill"), []byte("1"), 0)
			(cgtree.Found(elsewhere)).Remove(5 * time.Second)
		}
	})
	waitFile(t, ready)
	s.recordMembers() // what the tracker does every trackInterval
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := accept(t, ln)
	b, _ := os.ReadFile(pidFile)
	moved, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	s.recordMembers() // the move is seen on the tracker's next pass
	peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr())
	if err != nil || !peer.Harness || !peer.Escaped || peer.PID != moved || s.members.Owns(peer.CgroupID) {
		t.Fatalf("PeerOf(member moved to %s) = %+v, %v; want an escaped harness peer, pid %d", elsewhere, peer, err, moved)
	}
	if err := p.Stop(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if err := (cgtree.Found(elsewhere)).Remove(5 * time.Second); err != nil {
		t.Fatalf("the escapee outlived Stop: %v", err)
	}
	removed = true
}

// Without cgroup leaves the check goes by ancestry, not by the environment:
// a grandchild that cleared its environment, called setsid and was
// orphaned by a double fork is found among the members the tracker saw.
func TestPeerCheckWithoutCgroupGoesByAncestry(t *testing.T) {
	for _, prog := range []string{"bash", "setsid", "env"} {
		if _, err := exec.LookPath(prog); err != nil {
			testbin.Missing(t, "%s not installed", prog)
		}
	}
	s := newSup(t, Options{Cgroup: ModeOff})
	if m := s.Mechanisms(); m.PeerCheck != PeerCheckAncestry {
		t.Fatalf("peer check without cgroup = %q, want %q", m.PeerCheck, PeerCheckAncestry)
	}
	ln := listen(t)
	p, c := dialFromTree(t, s, ln, "exec 3<>/dev/tcp/127.0.0.1/PORT; sleep 30")
	if peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || !peer.Harness || peer.PID != p.Pid() {
		t.Fatalf("PeerOf(tree leader) = %+v, %v; want harness pid %d", peer, err, p.Pid())
	}

	dir := t.TempDir()
	ready, goFile := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	wait := `until [ -e ` + goFile + ` ]; do sleep 0.01; done`
	// The grandchild connects only once its parent has exited: no parent
	// chain leads from it to the tree then.
	script := `setsid env -i /bin/bash -c '( ` + wait + `; while kill -0 $$ 2>/dev/null; do sleep 0.01; done; exec 3<>/dev/tcp/127.0.0.1/` + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) +
		`; sleep 30 ) & : > ` + ready + `; ` + wait + `' & wait; sleep 30`
	q, err := s.Start(Spec{Path: "bash", Args: []string{"-c", script}, Env: DefaultEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Stop(context.Background(), 0) })
	waitFile(t, ready)
	s.recordMembers() // what the tracker does every trackInterval
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c = accept(t, ln)
	if peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || !peer.Harness || peer.PID == 0 || peer.PID == q.Pid() {
		t.Fatalf("PeerOf(scrubbed setsid double-forked grandchild) = %+v, %v; want a harness peer other than the leader %d", peer, err, q.Pid())
	}

	mine, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	c = accept(t, ln)
	if peer, err := s.PeerOf(c.LocalAddr(), c.RemoteAddr()); err != nil || peer.Harness || peer.Gone {
		t.Fatalf("PeerOf(test process) = %+v, %v; want a live peer that is not a harness", peer, err)
	}
}
