package episode

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"

	"github.com/harnessd/harnessd/process/sandbox"
)

// A sandbox kept across a session's episodes: it goes with the disk it
// binds (a reused quota file system, disk.go), whose top directories stay
// the same inodes, so the sandbox's binds of them stay valid. An episode
// that ends cleanly leaves its sandbox with its disk (keepSandbox); when
// the disk is given back, the sandbox is recycled (sandbox.Recycle: no
// process, socket, IPC object or file of the episode left, the pid
// counter reset) and the disk emptied down to its top directories
// (quota.FS.EmptyKeeping); the next episode to take the disk takes the
// sandbox when its configuration is the same (takeSandbox). Any step that
// fails closes the sandbox and the disk goes back as without one.

// reusesSandboxes reports whether the session's episodes hand their
// sandboxes on (sandbox.reuse): in sandbox isolation, on disks taken in
// turn, without a taskset (whose tasks bind their own files and set their
// own limits).
func (e *Env) reusesSandboxes() bool {
	return e.Sandboxed() && e.reusesDisks() && e.Config.Taskset() == nil && e.Config.Sandbox.Reused()
}

// skeletonNames are the top directories of an episode's disk a kept
// sandbox binds (dirsIn).
var skeletonNames = func() []string {
	d := dirsIn("/")
	return []string{filepath.Base(d.Workspace), filepath.Base(d.Home), filepath.Base(d.Tmp)}
}()

// takeSandbox hands over the sandbox the disk keeps when it was started
// with cfg, else closes it (nil then). Nil-safe.
func (d *disk) takeSandbox(cfg sandbox.Config, log *slog.Logger) *sandbox.Sandbox {
	if d == nil || d.sb == nil {
		return nil
	}
	sb, kept := d.sb, d.sbConfig
	d.sb = nil
	select {
	case <-sb.Done():
		sb.Close()
		return nil
	default:
	}
	if !reflect.DeepEqual(kept, cfg) {
		log.Debug("a kept sandbox is not reused: the episode's sandbox differs")
		sb.Close()
		return nil
	}
	return sb
}

// keepSandbox leaves sb, started with cfg, with the disk for its next
// episode; false (nothing done) when there is no disk or sb has ended.
func (d *disk) keepSandbox(sb *sandbox.Sandbox, cfg sandbox.Config) bool {
	if d == nil {
		return false
	}
	select {
	case <-sb.Done():
		return false
	default:
	}
	d.sb, d.sbConfig = sb, cfg
	return true
}

// recycle makes the disk and its kept sandbox fresh for the next episode:
// the sandbox recycled, then the disk emptied down to its top
// directories. On error the sandbox is closed and dropped.
func (d *disk) recycle(ctx context.Context) error {
	err := d.sb.Recycle(ctx)
	if err == nil {
		err = d.fs.EmptyKeeping(d.skeleton, skeletonNames)
	}
	if err != nil {
		err = errors.Join(err, d.closeSandbox())
	}
	return err
}

// closeSandbox closes the disk's kept sandbox, if any.
func (d *disk) closeSandbox() error {
	sb := d.sb
	d.sb = nil
	if sb == nil {
		return nil
	}
	return sb.Close()
}
