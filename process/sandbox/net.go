package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/harnessd/harnessd/process/sandbox/internal/loopback"
)

// openedDoor is a listener opened inside, as a file to pass on.
type openedDoor struct {
	name, addr string
	file       *os.File
}

// plainTCP listens without MPTCP (Go's default where the kernel has it):
// a door's accepted connections are then TCP sockets, which a recycle's
// sweep ends (sockdiag.Sweep); an MPTCP socket it could not.
var plainTCP = func() net.ListenConfig {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	return lc
}()

// openDoors readies the sandbox's own network namespace (loopback) and
// opens each door on 127.0.0.1.
func openDoors(doors []Door, hostNetwork bool) ([]openedDoor, error) {
	if !hostNetwork {
		if err := loopback.Ready(); err != nil {
			return nil, err
		}
	}
	var out []openedDoor
	for _, d := range doors {
		l, err := plainTCP.Listen(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(d.Port)))
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
