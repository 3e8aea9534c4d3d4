package episode

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/wire"
)

// sandboxMountPaths are the sandbox's own size-bounded tmpfs mounts, by
// the name LimitsReached gives them.
var sandboxMountPaths = [2]struct{ path, limit string }{
	{"/tmp", wire.LimitSandboxTmp},
	{"/dev/shm", wire.LimitSandboxShm},
}

// sandboxMounts holds a descriptor (O_PATH, close on exec) of each of the
// sandbox's tmpfs mounts, opened through its init at the first FullMounts
// so that each later turn's check is an fstatfs, not a statfs resolving
// /proc/PID/root/...; the sandbox's undo closes them before the sandbox
// goes. The zero value holds none; its methods are safe for concurrent
// use.
type sandboxMounts struct {
	mu     sync.Mutex
	fds    [len(sandboxMountPaths)]int
	open   [len(sandboxMountPaths)]bool
	closed bool
}

// statfs reads mount i's usage, opening its descriptor through the init
// pid first when it is not open yet; false when it cannot be read (the
// sandbox has ended, the mount is not there, the mounts are closed).
func (m *sandboxMounts) statfs(i, pid int) (quota.Usage, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return quota.Usage{}, false
	}
	if !m.open[i] {
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/root%s", pid, sandboxMountPaths[i].path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return quota.Usage{}, false
		}
		m.fds[i], m.open[i] = fd, true
	}
	var st unix.Statfs_t
	if unix.Fstatfs(m.fds[i], &st) != nil {
		return quota.Usage{}, false
	}
	return quota.Usage{Total: int64(st.Blocks) * st.Bsize, Avail: int64(st.Bavail) * st.Bsize, Inodes: st.Files, FreeInodes: st.Ffree}, true
}

// close closes the descriptors; later statfs calls read nothing.
func (m *sandboxMounts) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, ok := range m.open {
		if ok {
			unix.Close(m.fds[i])
			m.open[i] = false
		}
	}
	m.closed = true
}

// FullMounts lists the sandbox's own tmpfs mounts (its /tmp and /dev/shm,
// sized from limits.memory) that are full: a harness writing there gets
// ENOSPC. They are opened through the sandbox's init (/proc/PID/root), so
// nothing of the harness's is trusted, once per episode (sandboxMounts).
// Nil outside a sandbox.
func (ep *Episode) FullMounts() []string {
	if ep == nil || ep.sandbox == nil {
		return nil
	}
	var out []string
	for i, m := range sandboxMountPaths {
		if u, ok := ep.mounts.statfs(i, ep.sandbox.Pid()); ok && u.Total > 0 && u.Full() {
			out = append(out, m.limit)
		}
	}
	return out
}
