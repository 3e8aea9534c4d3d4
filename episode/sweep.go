package episode

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/internal/sessiondir"
)

// SweepWorkspaces removes the session directories under root that a daemon
// which is gone left behind, with the episode quotas (limits.disk) it left
// mounted in them (sessiondir.Sweep).
func SweepWorkspaces(root string, log *slog.Logger) ([]string, error) {
	return sessiondir.Sweep(root, log, func(dir string) error {
		quota.ThawBelow(dir) // a snapshot's freeze the daemon did not live to undo
		_, err := quota.UnmountBelow(dir)
		return err
	})
}

// LockDir creates the session's directory and takes its lock, once: a
// later daemon's sweep (sessiondir.Sweep) leaves the directory alone while it is
// held.
func (e *Env) LockDir() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dirLock != nil {
		return nil
	}
	f, err := sessiondir.Lock(e.Dir)
	if err != nil {
		return err
	}
	e.dirLock = f
	return nil
}

// ReleaseDir removes the session's directory (unless workspace.keep) and
// drops its lock. Call it once every episode is closed. A quota an
// episode left mounted (one that was never closed) is unmounted first:
// with the lock file gone no later sweep would find it.
func (e *Env) ReleaseDir() {
	if err := e.disks.close(); err != nil {
		e.Logger.Warn("the session's disks were not all unmounted", "err", err)
	}
	if ms, err := quota.UnmountBelow(e.Dir); len(ms) > 0 || err != nil {
		e.Logger.Warn("unmounted disk quotas of episodes that were not closed", "mounts", ms, "err", err)
	}
	if !e.Config.Workspace.Keep {
		os.RemoveAll(e.Dir)
	} else {
		os.Remove(filepath.Join(e.Dir, diskTemplate))
	}
	e.mu.Lock()
	lock := e.dirLock
	e.dirLock = nil
	e.mu.Unlock()
	if lock != nil {
		lock.Close()
	}
}
