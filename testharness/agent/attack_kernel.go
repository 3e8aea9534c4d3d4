package agent

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	attacks["io-uring"] = attackIOUring
	attacks["vsock"] = attackVsock
	attacks["connect-unix"] = attackConnectUnix
	attacks["open-ptys"] = attackOpenPtys
}

// attackIOUring: "io-uring" — io_uring_setup(1, params): the asynchronous
// I/O interface that bypasses per-syscall filtering. OK when a ring was
// made (and closed again).
func attackIOUring(context.Context, []string) AttackResult {
	var params [120]byte // struct io_uring_params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if errno != 0 {
		return failed(errno, "io_uring_setup")
	}
	unix.Close(int(fd))
	return AttackResult{OK: true, Detail: "io_uring_setup made a ring"}
}

// attackVsock: "vsock" — socket(AF_VSOCK, SOCK_STREAM): a door to the
// hypervisor's host. OK when the socket was made (and closed again).
func attackVsock(context.Context, []string) AttackResult {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	if err != nil {
		return failed(err, "socket(AF_VSOCK)")
	}
	unix.Close(fd)
	return AttackResult{OK: true, Detail: "socket(AF_VSOCK) made a socket"}
}

// attackConnectUnix: "connect-unix PATH" — connect to a host Unix socket
// (a daemon's control socket in /run). OK when the connection was made.
func attackConnectUnix(_ context.Context, args []string) AttackResult {
	if r := needArgs(args, 1, "connect-unix PATH"); r != nil {
		return *r
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failed(err, "socket(AF_UNIX)")
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: args[0]}); err != nil {
		return failed(err, "connect "+args[0])
	}
	return AttackResult{OK: true, Detail: "connected to " + args[0]}
}

// attackOpenPtys: "open-ptys N" — open N pseudo-terminals at once (the
// host's pty count is shared by everyone). Count is how many opened; OK
// when all N did, else errno names what refused the next one.
func attackOpenPtys(_ context.Context, args []string) AttackResult {
	if r := needArgs(args, 1, "open-ptys N"); r != nil {
		return *r
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n <= 0 {
		return AttackResult{Errno: "EINVAL", Detail: "open-ptys N: N must be a positive number"}
	}
	var opened []*os.File
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	for len(opened) < n {
		f, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			r := failed(err, fmt.Sprintf("open /dev/ptmx after %d", len(opened)))
			r.Count = len(opened)
			return r
		}
		opened = append(opened, f)
	}
	return AttackResult{OK: true, Count: n, Detail: fmt.Sprintf("opened %d ptys", n)}
}
