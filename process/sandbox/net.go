package sandbox

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openedDoor is a listener opened inside, as a file to pass on.
type openedDoor struct {
	name, addr string
	file       *os.File
}

// loopbackUp sets IFF_UP on lo with the SIOCSIFFLAGS ioctl: two ioctls on
// any socket, no netlink library and no new dependency for one flag.
func loopbackUp() error {
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

// openDoors brings lo up (in the sandbox's own network namespace) and
// opens each door on 127.0.0.1.
func openDoors(doors []Door, hostNetwork bool) ([]openedDoor, error) {
	if !hostNetwork {
		if err := loopbackUp(); err != nil {
			return nil, err
		}
	}
	var out []openedDoor
	for _, d := range doors {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(d.Port)))
		if err != nil {
			for _, o := range out {
				o.file.Close()
			}
			return nil, fmt.Errorf("door %s: %w", d.Name, err)
		}
		f, err := l.(*net.TCPListener).File()
		addr := l.Addr().String()
		l.Close()
		if err != nil {
			return nil, fmt.Errorf("door %s: %w", d.Name, err)
		}
		out = append(out, openedDoor{name: d.Name, addr: addr, file: f})
	}
	return out, nil
}
