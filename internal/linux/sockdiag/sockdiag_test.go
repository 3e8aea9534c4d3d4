package sockdiag

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"

	"golang.org/x/sys/unix"

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

// TestSweepEndsEverySocketOfTheNamespace leaves a connection in TIME_WAIT
// and a UDP socket in a network namespace of the test's own
// and sweeps it: the dump saw them first (the positive control), none is
// left after.
func TestSweepEndsEverySocketOfTheNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "a network namespace of the test's own needs root")
	}
	done := make(chan struct{})
	var before, left, lingering int
	var err error
	go testbin.OnThrowawayThread(func() {
		defer close(done)
		if err = unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return
		}
		if err = loopbackUp(); err != nil {
			return
		}
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return
		}
		defer ln.Close()
		var c net.Conn
		if c, err = net.Dial("tcp", ln.Addr().String()); err != nil {
			return
		}
		s, aerr := ln.Accept()
		if aerr != nil {
			err = aerr
			return
		}
		c.Close() // the dialler closes first: its end waits in TIME_WAIT
		s.Close()
		ln.Close()
		u, uerr := net.ListenPacket("udp", "127.0.0.1:0")
		if uerr != nil {
			err = uerr
			return
		}
		defer u.Close()
		if before, err = countSockets(); err != nil {
			return
		}
		if lingering = censusTotal(); lingering < before {
			return
		}
		if left, err = Sweep(); err != nil {
			return
		}
		lingering = censusTotal()
	})
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if before < 2 {
		t.Fatalf("the namespace held %d sockets before the sweep, want the TIME_WAIT end and the UDP socket", before)
	}
	if left != 0 || lingering != 0 {
		t.Fatalf("%d sockets left after the sweep (%d counted by Census)", left, lingering)
	}
}

// countSockets lists the TCP and UDP sockets of this thread's namespace.
func countSockets() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	n := 0
	for _, k := range sweptKinds {
		ids, err := dump(fd, k)
		if err != nil {
			return 0, err
		}
		n += len(ids)
	}
	return n, nil
}

// loopbackUp sets IFF_UP on lo of this thread's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

func TestCountProtocolsAndTimeWaits(t *testing.T) {
	table := "protocol  size sockets  memory press maxhdr  slab module     cl co\nUNIX      1088      2      -1   NI       0   yes  kernel      y  n\nTCP       2432      0       3   no     320   yes  kernel      y  y\nMPTCPv6   2048      1      -1   NI       0   yes  kernel      y  n\n"
	got := map[string]int{}
	if err := countProtocols(table, got); err != nil || got["UNIX"] != 2 || got["MPTCPv6"] != 1 || len(got) != 2 {
		t.Errorf("countProtocols = %v, %v; want UNIX 2 and MPTCPv6 1", got, err)
	}
	for _, bad := range []string{"", "UNIX 1 2\n", "protocol size sockets\nTCP 2432 x\n"} {
		if err := countProtocols(bad, map[string]int{}); err == nil {
			t.Errorf("countProtocols(%q) succeeded", bad)
		}
	}
	if n := timeWaits("sockets: used 9\nTCP: inuse 1 orphan 0 tw 34 alloc 1 mem 19\n"); n != 34 {
		t.Errorf("timeWaits = %d, want 34", n)
	}
}

// censusTotal counts every socket Census counts (-1 on an error).
func censusTotal() int { return total(Census()) }

// total adds up a census (-1 on an error).
func total(c map[string]int, err error) int {
	if err != nil {
		return -1
	}
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// TestCounterCountsAgainAtEachCensus keeps one Counter of a network
// namespace A of the test's own: a socket opened in A after the Counter
// is counted, and not once closed (each Census reads the kernel's tables
// again, not what the files held at the first), also when the Census runs
// on a thread in another namespace B with a socket of its own, which the
// Counter does not count and B's one-shot Census does (the positive
// control).
func TestCounterCountsAgainAtEachCensus(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "a network namespace of the test's own needs root")
	}
	type counts struct{ emptyA, openA, fromB, closedFromB, oneShotB int }
	var got counts
	// inNamespace runs f on a thread of a new network namespace, which is
	// thrown away with the thread once f returns.
	inNamespace := func(f func() error) error {
		done := make(chan error)
		go testbin.OnThrowawayThread(func() {
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				done <- err
				return
			}
			done <- f()
		})
		return <-done
	}
	var k *Counter
	var a net.PacketConn
	err := inNamespace(func() (err error) {
		if k, err = OpenCounter(); err != nil {
			return err
		}
		got.emptyA = total(k.Census())
		if a, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			return err
		}
		got.openA = total(k.Census())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	err = inNamespace(func() error {
		b, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer b.Close()
		got.fromB = total(k.Census())
		a.Close()
		got.closedFromB = total(k.Census())
		got.oneShotB = total(Census())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (counts{emptyA: 0, openA: 1, fromB: 1, closedFromB: 0, oneShotB: 1}); got != want {
		t.Fatalf("counts = %+v, want %+v", got, want)
	}
}

// BenchmarkCensus compares a count that opens the two /proc files each
// time (the package's Census) with a kept Counter's.
func BenchmarkCensus(b *testing.B) {
	b.Run("one-shot", func(b *testing.B) {
		for b.Loop() {
			if _, err := Census(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kept counter", func(b *testing.B) {
		k, err := OpenCounter()
		if err != nil {
			b.Fatal(err)
		}
		defer k.Close()
		for b.Loop() {
			if _, err := k.Census(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
