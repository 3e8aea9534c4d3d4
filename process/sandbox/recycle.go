package sandbox

import (
	"fmt"

	"github.com/harnessd/harnessd/process/sandbox/internal/loopback"
	"github.com/harnessd/harnessd/process/sandbox/internal/tenancy"
)

// Recycling, inside: the init puts its namespaces back to what a new
// sandbox of the same spec would hold, for a later tenant (an episode
// after the one that used it). Each step removes what could outlive a
// tenant's processes and checks that nothing is left; any check that
// fails ends the recycle with an error, and the daemon ends the sandbox
// instead of handing it on (docs/security.md, "A sandbox kept across a
// session's episodes").

// recycleInside puts the namespaces back to new for the next tenant and
// opens the doors again (the daemon closed the last tenant's): nothing of
// the last tenant's processes, sockets, IPC objects or files in the
// sandbox's own file systems is left, and the next process gets the pid a
// first one would. lo stays up and TIME_WAIT off from the setup. It runs on a thread that holds the init's capabilities
// (never the forker's), with no run going.
func recycleInside(spec initSpec, t *tenancy.State) ([]loopback.Door, error) {
	tenancy.KillRest()
	if err := tenancy.OnlyInitLeft(); err != nil {
		return nil, err
	}
	if !spec.HostNetwork {
		// The host's network namespace is not the sandbox's to sweep.
		if left, err := t.SweepSockets(); err != nil || left > 0 {
			return nil, fmt.Errorf("sockets of the last tenant: %d left (%v)", left, err)
		}
	}
	if err := t.ClearIPC(); err != nil {
		return nil, err
	}
	for _, s := range t.Scratches {
		if err := s.Empty(); err != nil {
			return nil, err
		}
	}
	if err := tenancy.ResetPidCounter(); err != nil {
		return nil, err
	}
	// lo's flags and tcp_max_tw_buckets are as the setup left them: a
	// tenant (not uid 0 inside) cannot change them.
	return listenDoors(spec.Doors)
}
