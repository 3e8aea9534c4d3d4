package sockdiag

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

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

// TestLookupOwnConnection looks up both ends of a loopback connection of
// this process: the uid is this process's and an inode is named; a closed
// listener's port is no socket.
func TestLookupOwnConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	local, remote := c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
	info, err := Lookup(local, remote)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sock_diag unusable under CI: %v", err)
		}
		testbin.Missing(t, "sock_diag unusable here: %v", err)
	}
	if info.UID != uint32(os.Geteuid()) || info.Inode == 0 {
		t.Fatalf("Lookup(own connection) = %+v", info)
	}
	if _, err := Lookup(local, netip.MustParseAddrPort("127.0.0.1:1")); !errors.Is(err, ErrGone) {
		t.Fatalf("Lookup(no such socket) = %v, want ErrGone", err)
	}
}
