// Package capability empties a thread's capability sets: the bounding set
// (so that an execve of a root process gains nothing), the ambient set,
// and the inheritable set, or every set. A sandbox's init calls it on the
// thread that then forks the harness (process/sandbox). It raises nothing
// and knows nothing of sandboxes.
package capability

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// DropBounding drops every capability the kernel knows from the calling
// thread's bounding set, and clears its ambient set.
func DropBounding() error {
	last := lastCap()
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	return nil
}

// ClearInheritable empties the calling thread's inheritable set and keeps
// its effective and permitted sets. With the bounding and ambient sets
// empty too (DropBounding), an execve from this thread, or from a child
// forked from it, gains no capability, even as uid 0.
func ClearInheritable() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear inheritable capabilities: %w", err)
	}
	return nil
}

// lastCap is the highest capability number the kernel knows, read once
// per process (63, every number a capability set can hold, when it
// cannot be read: dropping one the kernel does not know fails with
// EINVAL, which DropBounding ignores).
var lastCap = sync.OnceValue(func() int {
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return 63
})
