package sandbox

import (
	"errors"
	"fmt"
	"syscall"
)

// Setup stages a SetupError names.
const (
	StageClone    = "clone"    // creating the namespaces
	StageInit     = "init"     // the init did not get going
	StageNet      = "net"      // bringing lo up, opening the doors
	StageMounts   = "mounts"   // building the new root
	StageProc     = "proc"     // mounting a fresh /proc
	StageDevpts   = "devpts"   // mounting the sandbox's own devpts
	StageUTS      = "uts"      // setting the hostname
	StageExec     = "exec"     // executing the harness
	StageIdentity = "identity" // dropping ids and capabilities, seccomp, rlimits
	StageRecycle  = "recycle"  // putting a kept sandbox back to new (Recycle)
)

// SetupError reports a sandbox that could not be set up, with the stage
// that failed.
type SetupError struct {
	Stage string
	Err   error
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("sandbox %s: %v%s", e.Stage, e.Err, hint(e.Stage, e.Err))
}

func (e *SetupError) Unwrap() error { return e.Err }

// hint says what a failure at a stage usually means on a host.
func hint(stage string, err error) string {
	switch {
	case stage == StageClone && errors.Is(err, syscall.EACCES):
		return " (the new user namespace's id map could not be written: an unprivileged daemon maps only its own uid, from a process its /proc files belong to)"
	case stage == StageClone && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EINVAL):
		return ""
	case stage == StageClone:
		return " (no permission to create user namespaces: kernel.unprivileged_userns_clone=0, user.max_user_namespaces=0 or an AppArmor restriction (Ubuntu 24.04's kernel.apparmor_restrict_unprivileged_userns); run as root or allow user namespaces)"
	case stage == StageProc:
		return " (mounting proc in the sandbox failed: the host's /proc is partly masked (a container without --privileged))"
	}
	return ""
}
