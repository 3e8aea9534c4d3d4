package episode

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/wire"
)

// sandboxMounts are the sandbox's own size-bounded tmpfs mounts, by the
// name LimitsReached gives them.
var sandboxMounts = []struct{ path, limit string }{
	{"/tmp", wire.LimitSandboxTmp},
	{"/dev/shm", wire.LimitSandboxShm},
}

// FullMounts lists the sandbox's own tmpfs mounts (its /tmp and /dev/shm,
// sized from limits.memory) that are full: a harness writing there gets
// ENOSPC. They are read through the sandbox's init (/proc/PID/root), so
// nothing of the harness's is trusted. Nil outside a sandbox.
func (ep *Episode) FullMounts() []string {
	if ep == nil || ep.sandbox == nil {
		return nil
	}
	var out []string
	for _, m := range sandboxMounts {
		var st unix.Statfs_t
		if unix.Statfs(fmt.Sprintf("/proc/%d/root%s", ep.sandbox.Pid(), m.path), &st) != nil {
			continue // the sandbox has ended, or the mount is not there
		}
		u := quota.Usage{Total: int64(st.Blocks) * st.Bsize, Avail: int64(st.Bavail) * st.Bsize, Inodes: st.Files, FreeInodes: st.Ffree}
		if u.Total > 0 && u.Full() {
			out = append(out, m.limit)
		}
	}
	return out
}
