package episode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/internal/units"
)

// diskUnavailable is set once a default (unset) limits.disk could not be
// applied on this host: later episodes of every session go without, as
// the first one did, and the warning is logged once.
var (
	diskUnavailable atomic.Bool
	diskWarnOnce    sync.Once
)

// diskTemplate is the formatted image in the session's directory that
// every episode's quota image is copied from (quota.Maker).
const diskTemplate = ".quota-template.img"

// DiskQuota returns the per-episode storage bound the session applies, in
// bytes: limits.disk (DefaultDisk when unset), 0 when off or, for the
// default, when this host cannot make one.
func (e *Env) DiskQuota() int64 {
	size, explicit := e.Config.Limits.DiskQuota()
	if !explicit && diskUnavailable.Load() {
		return 0
	}
	return size
}

// mountDisk gives the episode directory root a file system of limits.disk
// bytes (the image beside it, root+".img"); nil when the session applies
// no quota. A default quota this host cannot make (quota.ErrUnsupported)
// is given up for the process (logged once); a configured one, or any
// other failure, fails the episode.
func (e *Env) mountDisk(ctx context.Context, root string) (*quota.FS, error) {
	size := e.DiskQuota()
	if size == 0 {
		return nil, nil
	}
	e.mu.Lock()
	if e.diskMaker == nil {
		e.diskMaker = quota.NewMaker(filepath.Join(e.Dir, diskTemplate), size)
	}
	m := e.diskMaker
	e.mu.Unlock()
	fs, err := m.Mount(ctx, root, root+".img")
	if err == nil {
		return fs, nil
	}
	// Only a host without the mechanism gives the default quota up; any
	// other failure (a full disk) fails the episode, as a set one does.
	if _, explicit := e.Config.Limits.DiskQuota(); explicit || !errors.Is(err, quota.ErrUnsupported) {
		return nil, fmt.Errorf("limits.disk %s: %w", units.ByteSize(size), err)
	}
	diskUnavailable.Store(true)
	diskWarnOnce.Do(func() {
		e.Logger.Warn("no per-episode disk quota on this host: episodes' workspace, HOME and TMPDIR are bounded only by the host's disk (limits.disk needs root, loop devices and mke2fs; set limits.disk: 0 to go without and silence this, or a size to require it)", "err", err)
	})
	return nil, nil
}

// openDisk mounts the episode's quota on its directory (sandbox or process
// isolation alike) and pushes its undo (pushDisk).
func (ep *Episode) openDisk(ctx context.Context, root string) error {
	fs, err := ep.env.mountDisk(ctx, root)
	if err != nil || fs == nil {
		return err
	}
	ep.pushDisk(fs)
	return nil
}

// pushDisk makes fs the episode's quota and pushes its undo: the unmount,
// which with workspace.keep first copies what the episode wrote out to the
// host's directory.
func (ep *Episode) pushDisk(fs *quota.FS) {
	ep.disk = fs
	ep.undo.push(ResourceDisk, func(context.Context) error {
		if ep.env.Config.Workspace.Keep {
			return keepAndUnmount(fs)
		}
		return fs.Unmount()
	})
}

// keepAndUnmount copies the file system's tree beside its mount point,
// unmounts it and moves the copy into the (now empty) mount point: a kept
// episode's directories stay readable on the host.
func keepAndUnmount(fs *quota.FS) error {
	kept := fs.Dir + ".kept"
	if err := copyTree(fs.Dir, kept); err != nil {
		return errors.Join(fmt.Errorf("keep the episode's directories: %w", err), fs.Unmount())
	}
	if err := fs.Unmount(); err != nil {
		return err
	}
	ents, err := os.ReadDir(kept)
	if err != nil {
		return fmt.Errorf("keep the episode's directories: %w", err)
	}
	for _, en := range ents {
		if err := os.Rename(filepath.Join(kept, en.Name()), filepath.Join(fs.Dir, en.Name())); err != nil {
			return fmt.Errorf("keep the episode's directories: %w", err)
		}
	}
	return os.Remove(kept)
}

// DiskFull reports whether the episode's quota is reached (writes fail
// with ENOSPC: less than 1 MiB, or a 64th of limits.disk, available, or
// no inode left); false without a quota.
func (ep *Episode) DiskFull() bool {
	if ep == nil || ep.disk == nil {
		return false
	}
	u, err := ep.disk.Usage()
	return err == nil && u.Full()
}

// DiskUsage returns the episode's quota's usage; false without a quota.
func (ep *Episode) DiskUsage() (quota.Usage, bool) {
	if ep == nil || ep.disk == nil {
		return quota.Usage{}, false
	}
	u, err := ep.disk.Usage()
	return u, err == nil
}

// clearLeftover removes an episode directory of a daemon that is gone at
// root (the same session id and sequence number), unmounting what it left
// mounted there first.
func clearLeftover(root string) {
	if _, err := os.Lstat(root); err != nil {
		return
	}
	quota.ThawBelow(root) // a snapshot's freeze the daemon did not live to undo
	quota.UnmountBelow(root)
	os.RemoveAll(root)
	os.Remove(root + ".img")
}
