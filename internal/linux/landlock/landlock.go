// Package landlock scopes the calling thread (and what it executes) with
// Landlock's IPC scoping: no connect to an abstract Unix socket that was
// made outside the new domain. It restricts
// no file or network access (process/sandbox's mounts and namespaces do
// that) and knows nothing of sandboxes.
package landlock

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ABI returns the kernel's Landlock ABI version, 0 when Landlock is off or
// missing.
func ABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
}

// scopeABI is the first ABI with scoping (Linux 6.12).
const scopeABI = 6

// rulesetAttrSize is the size of struct landlock_ruleset_attr up to and
// including scoped: the kernel accepts a prefix of the struct as it grew.
const rulesetAttrSize = 24

// ScopeAbstractUnix puts the calling thread in a new Landlock domain that
// may not connect to abstract Unix sockets made outside it (signals are
// left alone: the PID namespace already confines them). no_new_privs must
// be set. It returns false, and does nothing, where the kernel has no
// scoping (ABI < 6).
func ScopeAbstractUnix() (bool, error) {
	if ABI() < scopeABI {
		return false, nil
	}
	attr := unix.LandlockRulesetAttr{Scoped: unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), rulesetAttrSize, 0)
	if e != 0 {
		return false, fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	defer unix.Close(int(fd))
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return false, fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return true, nil
}
