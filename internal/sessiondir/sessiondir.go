// Package sessiondir owns the lock that marks a session directory as its
// daemon's for the session's life, and the sweep that removes the
// directories of daemons that are gone. It must not know what a session
// keeps inside.
package sessiondir

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// sessionLockName is the file in each session directory on which the
// session's daemon holds an exclusive flock for the session's life. The
// kernel drops the lock however the daemon ends (SIGKILL included), which is
// how a later daemon tells a leftover directory from a live one: a pid says
// nothing when every container's daemon is PID 1.
const sessionLockName = ".harnessd.lock"

// Lock creates dir (the session's directory) and takes its lock.
// The lock file is made under a temporary name, locked, then renamed into
// place, so a sweeper never finds it unlocked.
func Lock(dir string) (*os.File, error) {
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

// Sweep removes the session directories under root that a daemon which is
// gone left behind (a daemon killed with SIGKILL cannot remove its own):
// those whose lock file no process holds; before removing one it calls
// release (nil: nothing) with it, to undo what lives inside (mounts). Directories whose lock is
// held belong to a live daemon and are kept; directories without a lock file
// (being created, or made by an older harnessd) are left alone. It logs each
// directory it removes and returns their paths. A root that does not exist
// has nothing to sweep.
func Sweep(root string, log *slog.Logger, release func(dir string) error) ([]string, error) {
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
		if release != nil {
			if err := release(dir); err != nil {
				errs = append(errs, fmt.Errorf("release a leftover session directory: %w", err))
				continue
			}
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
