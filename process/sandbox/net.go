package sandbox

import (
	"github.com/harnessd/harnessd/process/sandbox/internal/loopback"
)

// openDoors readies the sandbox's own network namespace (loopback) and
// opens each door on 127.0.0.1.
func openDoors(doors []Door, hostNetwork bool) ([]loopback.Door, error) {
	if !hostNetwork {
		if err := loopback.Ready(); err != nil {
			return nil, err
		}
	}
	return listenDoors(doors)
}

// listenDoors opens each door on 127.0.0.1 (a recycle: lo is up and
// TIME_WAIT off from the sandbox's setup, the namespace root's to change).
func listenDoors(doors []Door) ([]loopback.Door, error) {
	names, ports := make([]string, len(doors)), make([]int, len(doors))
	for i, d := range doors {
		names[i], ports[i] = d.Name, d.Port
	}
	return loopback.Listen(names, ports)
}
