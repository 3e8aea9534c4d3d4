package episode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/internal/treecopy"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process/sandbox"
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

// mountDisk gives the directory root a file system of limits.disk bytes
// (the image beside it, root+".img"); nil when the session applies no
// quota. A default quota this host cannot make (quota.ErrUnsupported) is
// given up for the process (logged once); a configured one, or any other
// failure, fails the episode.
func (e *Env) mountDisk(ctx context.Context, root string) (*quota.FS, error) {
	size := e.DiskQuota()
	if size == 0 {
		return nil, nil
	}
	fs, err := e.disks.maker(e.Dir, size).Mount(ctx, root, root+".img")
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
// isolation alike) and pushes its undo (pushDisk). It serves
// workspace.keep only; otherwise episodes take a session's disk in turn
// (openSlot).
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
	ep.undo.push(ResourceDisk, func(ctx context.Context) error {
		if ep.env.Config.Workspace.Keep {
			// Not cut short by a closing session's context: keeping
			// was asked for, and the copy is bounded by limits.disk.
			return keepAndUnmount(context.WithoutCancel(ctx), fs)
		}
		return fs.Unmount()
	})
}

// reusesDisks reports whether the session's episodes take its quota file
// systems in turn (openSlot): with a quota and without workspace.keep
// (whose episodes' files stay on the host once they end).
func (e *Env) reusesDisks() bool { return e.DiskQuota() > 0 && !e.Config.Workspace.Keep }

// openSlot gives the episode a disk of the session's (a quota file
// system of limits.disk bytes, its root the episode's directory): an
// emptied one an earlier episode gave back, else a new one. Its undos:
// the directories (nothing: they go with the disk) and the disk, given
// back emptied for a later episode, or unmounted when it cannot be
// made fresh or anything of the episode failed to close (a process of
// it may still write there). ok is false, with nothing done, when the
// default quota was given up on this host (mountDisk).
func (ep *Episode) openSlot(ctx context.Context) (ok bool, err error) {
	e := ep.env
	d := e.disks.take(ctx, ep.needed)
	if d == nil {
		if err := os.MkdirAll(e.Dir, 0o700); err != nil {
			return false, fmt.Errorf("create the session's directory: %w", err)
		}
		root := filepath.Join(e.Dir, fmt.Sprintf("disk-%d", e.nextSeq()))
		clearLeftover(root) // a crashed daemon's, with the same layout
		fs, err := e.mountDisk(ctx, root)
		if err != nil || fs == nil {
			os.Remove(root)
			return false, err
		}
		fresh, err := fs.Usage()
		if err != nil {
			return false, errors.Join(err, fs.Unmount(), os.Remove(root))
		}
		d = &disk{fs: fs, fresh: fresh}
	}
	ep.dirs = dirsIn(d.fs.Dir)
	ep.disk, ep.slot = d.fs, d
	ep.undo.push(ResourceDirectories, func(context.Context) error { return nil })
	ep.undo.push(ResourceDisk, func(ctx context.Context) error {
		ep.slot = nil // given back: a later Close waits for nothing (willReturn)
		return e.disks.put(ctx, d, !ep.undo.anyFailed(), e.Logger)
	})
	ep.keep = ep.undo.size()
	if err := makeSkeleton(ep.dirs); err != nil {
		return true, err
	}
	if d.sb == nil { // else EmptyKeeping has checked it is the skeleton
		if d.skeleton, err = d.fs.Usage(); err != nil {
			return true, err
		}
	}
	return true, copyTemplate(e.Config.Workspace.Template, ep.dirs)
}

// dirsIn are the private directories of an episode whose directory is
// root.
func dirsIn(root string) Dirs {
	return Dirs{
		Root:      root,
		Workspace: filepath.Join(root, "workspace"),
		Home:      filepath.Join(root, "home"),
		Tmp:       filepath.Join(root, "tmp"),
	}
}

// maxIdleDisks is how many emptied disks a session keeps for its next
// episodes; more are unmounted. A session has at most its episode, the
// one retiring and the ones prepared ahead live at once.
const maxIdleDisks = 2

// disk is one quota file system a session's episodes use in turn, with
// the sandbox an episode left on it (sandboxreuse.go).
type disk struct {
	fs       *quota.FS
	fresh    quota.Usage // right after it was mounted
	skeleton quota.Usage // with its top directories made, empty
	sb       *sandbox.Sandbox
	sbConfig sandbox.Config // sb's
	// returning: the episode on it is closing (disks.returning counts it).
	returning bool
}

// disks are a session's quota file systems: the template they are made
// from and the emptied ones waiting for an episode. The zero value is
// ready; its methods are safe for concurrent use.
type disks struct {
	mu     sync.Mutex
	make   *quota.Maker
	idle   []*disk
	closed bool
	// returning counts disks whose episodes are closing; put closes
	// (and replaces) back when it takes one back, for take to wait on.
	returning int
	back      chan struct{}
	// after, when set (tests), stands for returnWait's timer in take.
	after <-chan time.Time
}

// returnWait bounds how long take waits for a closing episode's disk
// instead of making a new one once someone waits for the take: a close
// normally gives its disk back within milliseconds; a harness that takes
// longer to exit at SIGTERM, or ignores it, holds the disk for as long
// (up to the stop grace).
const returnWait = 250 * time.Millisecond

// maker returns the session's Maker, made at the first call.
func (ds *disks) maker(dir string, size int64) *quota.Maker {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.make == nil {
		ds.make = quota.NewMaker(filepath.Join(dir, diskTemplate), size)
	}
	return ds.make
}

// take hands out an emptied disk, nil when none is waiting. When none is
// but an episode's disk is on its way back (its episode closing), it waits
// for it (or until ctx ends): a disk made fresh, and the sandbox kept on
// it, cost less than new ones. needed says when someone waits for the
// take (a nil channel: from the start); from then on it waits returnWait
// at most. A prepared episode's take thus waits out a harness slow to
// exit while no reset needs it, where a bound from the start made a new
// disk and sandbox for every episode of such a harness.
func (ds *disks) take(ctx context.Context, needed <-chan struct{}) *disk {
	var bound <-chan time.Time
	for {
		ds.mu.Lock()
		if n := len(ds.idle); n > 0 {
			d := ds.idle[n-1]
			ds.idle = ds.idle[:n-1]
			ds.mu.Unlock()
			return d
		}
		if ds.returning == 0 || ds.closed {
			ds.mu.Unlock()
			return nil
		}
		if ds.back == nil {
			ds.back = make(chan struct{})
		}
		back := ds.back
		ds.mu.Unlock()
		if needed == nil && bound == nil {
			bound = ds.waitBound()
		}
		select {
		case <-back:
		case <-needed:
			needed = nil // from now on bounded
		case <-bound:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// waitBound returns what ends take's wait once it is needed: returnWait
// from now, or the test's channel (after).
func (ds *disks) waitBound() <-chan time.Time {
	if ds.after != nil {
		return ds.after
	}
	return time.After(returnWait)
}

// willReturn notes that d's episode is closing: take may wait for it.
func (ds *disks) willReturn(d *disk) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if !d.returning {
		d.returning = true
		ds.returning++
	}
}

// returned notes that d is back (idle or dropped) and wakes take.
func (ds *disks) returned(d *disk) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if d.returning {
		d.returning = false
		ds.returning--
	}
	if ds.back != nil {
		close(ds.back)
		ds.back = nil
	}
}

// put takes a disk back from an episode that has ended (clean: all of it
// closed without an error): emptied and kept for a later one, or
// unmounted when it was not clean, cannot be made fresh, the session
// has enough waiting or has closed.
func (ds *disks) put(ctx context.Context, d *disk, clean bool, log *slog.Logger) error {
	defer ds.returned(d)
	ds.mu.Lock()
	keep := clean && !ds.closed && len(ds.idle) < maxIdleDisks
	ds.mu.Unlock()
	if d.sb != nil && keep {
		err := d.recycle(ctx)
		if err == nil {
			if keep = ds.keepIdle(d); keep {
				return nil
			}
		}
		log.Debug("an episode's sandbox is not reused", "dir", d.fs.Dir, "err", err)
	}
	if err := d.closeSandbox(); err != nil {
		log.Warn("a kept sandbox not fully released", "err", err)
	}
	if keep {
		err := d.fs.Empty(d.fresh)
		if err == nil {
			if ds.keepIdle(d) {
				return nil
			}
		} else {
			log.Debug("an episode's disk is not reused", "dir", d.fs.Dir, "err", err)
		}
	}
	return errors.Join(d.fs.Unmount(), os.Remove(d.fs.Dir))
}

// keepIdle adds d to the disks waiting for an episode unless the session
// has closed or has enough waiting.
func (ds *disks) keepIdle(d *disk) bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.closed || len(ds.idle) >= maxIdleDisks {
		return false
	}
	ds.idle = append(ds.idle, d)
	return true
}

// close unmounts the waiting disks; put unmounts the rest as they come
// back.
func (ds *disks) close() error {
	ds.mu.Lock()
	idle := ds.idle
	ds.idle, ds.closed = nil, true
	ds.mu.Unlock()
	var errs []error
	for _, d := range idle {
		errs = append(errs, d.closeSandbox(), d.fs.Unmount(), os.Remove(d.fs.Dir))
	}
	return errors.Join(errs...)
}

// keepAndUnmount copies the file system's tree beside its mount point,
// unmounts it and moves the copy into the (now empty) mount point: a kept
// episode's directories stay readable on the host. The copy keeps holes
// and hard links (treecopy), so it takes about what the episode used of
// limits.disk: a copy that wrote each hole and each link out in full put
// 2.4 GiB on the host for an episode at 8 MiB of its 64 MiB quota.
func keepAndUnmount(ctx context.Context, fs *quota.FS) error {
	kept := fs.Dir + ".kept"
	if err := treecopy.Copy(ctx, fs.Dir, kept, false); err != nil {
		os.RemoveAll(kept)
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
