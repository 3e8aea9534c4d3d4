package sandbox

import (
	"fmt"

	"github.com/harnessd/harnessd/internal/linux/ipcns"
	"github.com/harnessd/harnessd/internal/linux/sockdiag"
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

// tenantState is what the init notes at setup to put the sandbox back
// for a later tenant: its own scratch file systems as they were made and
// a view of the namespace's POSIX message queues (nil where the kernel
// has no detached mounts: each clear then mounts one for the moment).
type tenantState struct {
	scratches []tenancy.Scratch
	queues    *ipcns.Queues
}

// noteTenantState notes the scratch mounts and opens the queues' view.
func noteTenantState(storage []tenancy.Mount) (tenantState, error) {
	scratches, err := tenancy.Record(storage)
	if err != nil {
		return tenantState{}, err
	}
	q, err := ipcns.OpenQueues()
	if err != nil {
		q = nil // ClearMessageQueues mounts one at each clear
	}
	return tenantState{scratches: scratches, queues: q}, nil
}

// clearQueues removes every POSIX message queue of the namespace.
func (t tenantState) clearQueues() error {
	if t.queues != nil {
		return t.queues.Clear()
	}
	// The empty read-only /sys is where a mqueue file system is looked
	// into for the moment it takes.
	return ipcns.ClearMessageQueues("/sys")
}

// recycleInside puts the namespaces back to new for the next tenant and
// opens the doors again (the daemon closed the last tenant's): nothing of
// the last tenant's processes, sockets, IPC objects or files in the
// sandbox's own file systems is left, and the next process gets the pid a
// first one would. It runs on a thread that holds the init's capabilities
// (never the forker's), with no run going.
func recycleInside(spec initSpec, t tenantState) ([]loopback.Door, error) {
	killRest()
	if err := tenancy.OnlyInitLeft(); err != nil {
		return nil, err
	}
	if !spec.HostNetwork {
		// The host's network namespace is not the sandbox's to sweep.
		if left, err := sockdiag.Sweep(); err != nil || left > 0 {
			return nil, fmt.Errorf("sockets of the last tenant: %d left (%v)", left, err)
		}
	}
	if err := ipcns.ClearSysV(); err != nil {
		return nil, err
	}
	if err := t.clearQueues(); err != nil {
		return nil, err
	}
	for _, s := range t.scratches {
		if err := s.Empty(); err != nil {
			return nil, err
		}
	}
	if err := tenancy.ResetPidCounter(); err != nil {
		return nil, err
	}
	return openDoors(spec.Doors, spec.HostNetwork)
}
