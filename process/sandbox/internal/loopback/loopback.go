// Package loopback readies a sandbox's own network namespace for its
// doors, from its init: lo up, no TCP connection kept in TIME_WAIT, and
// the doors' listeners on 127.0.0.1. It touches nothing but the calling
// thread's network namespace.
package loopback

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Ready brings lo up and keeps no connection in TIME_WAIT.
func Ready() error {
	if err := up(); err != nil {
		return err
	}
	return noTimeWait()
}

// up sets IFF_UP on lo with the SIOCSIFFLAGS ioctl: two ioctls on
// any socket, no netlink library and no new dependency for one flag.
func up() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

// noTimeWait keeps no TCP connection of the sandbox's network namespace
// in TIME_WAIT once closed (tcp_max_tw_buckets 0, a sysctl of the
// namespace's own): on a loopback-only network no stray segment of an
// old connection can arrive, and a closed connection then leaves nothing
// in the kernel for a later tenant to read (Recycle).
func noTimeWait() error {
	if err := os.WriteFile("/proc/sys/net/ipv4/tcp_max_tw_buckets", []byte("0"), 0); err != nil {
		return fmt.Errorf("keep no TIME_WAIT: %w", err)
	}
	return nil
}

// Door is a listener opened inside, as a file to pass on.
type Door struct {
	Name, Addr string
	File       *os.File
}

// plainTCP listens without MPTCP (Go's default where the kernel has it):
// a door's accepted connections are then TCP sockets, which a recycle's
// sweep ends (sockdiag.Sweep); an MPTCP socket it could not.
var plainTCP = func() net.ListenConfig {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	return lc
}()

// Listen opens a door on 127.0.0.1 for each name, at its port in ports
// (0: any).
func Listen(names []string, ports []int) ([]Door, error) {
	var out []Door
	for i, name := range names {
		l, err := plainTCP.Listen(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])))
		if err != nil {
			for _, o := range out {
				o.File.Close()
			}
			return nil, fmt.Errorf("door %s: %w", name, err)
		}
		f, err := l.(*net.TCPListener).File()
		addr := l.Addr().String()
		l.Close()
		if err != nil {
			return nil, fmt.Errorf("door %s: %w", name, err)
		}
		out = append(out, Door{Name: name, Addr: addr, File: f})
	}
	return out, nil
}
