package process

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestParseProcAddr(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{"0100007F:1F40", "127.0.0.1:8000"},
		{"00000000:0016", "0.0.0.0:22"},
		{"00000000000000000000000001000000:1F90", "[::1]:8080"},
		{"0000000000000000FFFF00000100007F:0050", "127.0.0.1:80"}, // v4-mapped, unmapped
	} {
		got, err := parseProcAddr(c.in)
		if err != nil || got != netip.MustParseAddrPort(c.want) {
			t.Errorf("parseProcAddr(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:", "zz00007F:1F40", "01007F:1F40", "0100007F:10000", "0100007F:xyz"} {
		if got, err := parseProcAddr(bad); err == nil {
			t.Errorf("parseProcAddr(%q) = %v, want an error", bad, got)
		}
	}
}

func TestSocketInodeFromTable(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:D431 0100007F:1F40 01 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 20 4 30 10 -1
   2: short line
   3: 0100007F:1F40 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 20 4 30 10 -1
`
	path := filepath.Join(t.TempDir(), "tcp")
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	lookup := func(local, remote string) string {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return socketInode(f, netip.MustParseAddrPort(local), netip.MustParseAddrPort(remote))
	}
	if got := lookup("127.0.0.1:54321", "127.0.0.1:8000"); got != "2222" {
		t.Errorf("client end inode = %q, want 2222", got)
	}
	if got := lookup("127.0.0.1:8000", "127.0.0.1:54321"); got != "3333" {
		t.Errorf("server end inode = %q, want 3333", got)
	}
	if got := lookup("127.0.0.1:1", "127.0.0.1:2"); got != "" {
		t.Errorf("absent connection inode = %q, want none", got)
	}
}

// accept returns the server end of the next connection on ln.
func accept(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPeerOfRealConnections(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		testbin.Missing(t, "bash (for /dev/tcp) not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := newSup(t, Options{Cgroup: ModeOff}) // the /proc scan by ancestry
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	// The leader of a supervised tree connects.
	p, err := s.Start(Spec{Path: "bash", Args: []string{"-c", "exec 3<>/dev/tcp/127.0.0.1/" + port + "; sleep 30"}, Env: DefaultEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), 0)
	c := accept(t, ln)
	// Under load the lookup can miss a connection this young (the /proc scan
	// races the peer's fd table; the check fails open, one reason the sandbox
	// replaces it): ask again for a while before calling it a failure.
	var peer Peer
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		peer, err = s.PeerOf(c.LocalAddr(), c.RemoteAddr())
		if (err == nil && peer.Harness) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || peer != (Peer{PID: p.Pid(), Harness: true}) {
		t.Fatalf("PeerOf(harness connection) = %+v, %v; want pid %d, harness", peer, err, p.Pid())
	}

	// The test process is no tree's member: not a harness.
	mine, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	c2 := accept(t, ln)
	if peer, err := s.PeerOf(c2.LocalAddr(), c2.RemoteAddr()); err != nil || peer.Harness || peer.PID != 0 {
		t.Fatalf("PeerOf(own connection) = %+v, %v; want no harness", peer, err)
	}

	// Another machine is never looked up; a non-TCP address is an error.
	other := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 4000}
	if peer, err := s.PeerOf(c.LocalAddr(), other); err != nil || peer != (Peer{}) {
		t.Fatalf("PeerOf(remote machine) = %+v, %v; want zero", peer, err)
	}
	if _, err := s.PeerOf(&net.UnixAddr{Name: "x"}, &net.UnixAddr{Name: "y"}); err == nil {
		t.Fatal("PeerOf(unix addresses) succeeded")
	}
}
