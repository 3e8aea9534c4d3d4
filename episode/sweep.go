package episode

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/quota"
)

// sessionLockName is the file in each session directory on which the
// session's daemon holds an exclusive flock for the session's life. The
// kernel drops the lock however the daemon ends (SIGKILL included), which is
// how a later daemon tells a leftover directory from a live one: a pid says
// nothing when every container's daemon is PID 1.
const sessionLockName = ".harnessd.lock"

// lockSessionDir creates dir (the session's directory) and takes its lock.
// The lock file is made under a temporary name, locked, then renamed into
// place, so a sweeper never finds it unlocked.
func lockSessionDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create session directory: %w", err)
	}
	f, err := os.CreateTemp(dir, sessionLockName+".*")
	if err != nil {
		return nil, fmt.Errorf("create session lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("lock session directory: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, sessionLockName)); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("lock session directory: %w", err)
	}
	return f, nil
}

// SweepWorkspaces removes the session directories under root that a daemon
// which is gone left behind (a daemon killed with SIGKILL cannot remove its
// own), with the episode quotas it left mounted in them: those whose lock
// file no process holds. Directories whose lock is
// held belong to a live daemon and are kept; directories without a lock file
// (being created, or made by an older harnessd) are left alone. It logs each
// directory it removes and returns their paths. A root that does not exist
// has nothing to sweep.
func SweepWorkspaces(root string, log *slog.Logger) ([]string, error) {
	if log == nil {
		log = slog.Default()
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sweep workspaces: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		gone, err := leftover(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !gone {
			continue
		}
		// The episodes' quotas (limits.disk) it left mounted go first:
		// their loop devices detach with them.
		if _, err := quota.UnmountBelow(dir); err != nil {
			errs = append(errs, fmt.Errorf("unmount a leftover session's quotas: %w", err))
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove leftover session directory: %w", err))
			continue
		}
		log.Info("removed a session directory left by a daemon that is gone", "path", dir)
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// leftover reports whether dir is a session directory whose daemon is gone:
// it has a lock file and the lock can be taken.
func leftover(dir string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, sessionLockName), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sweep workspaces: %w", err)
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil // a live daemon holds it
	}
	if err != nil {
		return false, fmt.Errorf("sweep workspaces: lock %s: %w", dir, err)
	}
	return true, nil
}

// LockDir creates the session's directory and takes its lock, once: a
// later daemon's SweepWorkspaces leaves the directory alone while it is
// held.
func (e *Env) LockDir() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dirLock != nil {
		return nil
	}
	f, err := lockSessionDir(e.Dir)
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
