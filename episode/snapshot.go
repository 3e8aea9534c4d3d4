package episode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/internal/treecopy"
)

// ErrWriteHeldOpen marks a Snapshot whose disk did not freeze within
// quota.FreezeWait: a writer, a process of the harness, holds a write to
// it open (splice from an empty pipe into a file does, for as long as it
// likes). The kernel's freeze goes on waiting for it, and every later
// write to the disk blocks until it ends, the daemon's own too: the
// caller stops the harness, which ends the write, and the freeze is
// undone at once.
var ErrWriteHeldOpen = quota.ErrFreezeTimedOut

// Snapshot methods, as Snapshot.Method names them.
const (
	// SnapshotReflink: the episode's quota image cloned (FICLONE) on a host
	// file system with reflinks; it shares the image's extents.
	SnapshotReflink = "reflink"
	// SnapshotImageCopy: the episode's quota image's data extents copied
	// (SEEK_DATA/SEEK_HOLE + copy_file_range): a 10 GiB image holding
	// 1 MiB costs about 1 MiB plus the file system's metadata.
	SnapshotImageCopy = "image-copy"
	// SnapshotTreeCopy: the workspace, HOME and TMPDIR trees copied (an
	// episode without a quota), each file cloned where the host allows,
	// else its data extents copied.
	SnapshotTreeCopy = "tree-copy"
)

// snapshotImage is the file name of a snapshot's quota image; the tree
// copies are named as the episode's directories are (dirNames).
const snapshotImage = "image"

// dirNames are the episode directories a snapshot holds and a restore
// fills, by their name below the episode's root (episodeRoot).
var dirNames = []string{"workspace", "home", "tmp"}

// Snapshot is a frozen copy of an episode's private directories
// (workspace, HOME, TMPDIR) at one moment: Episode.Snapshot takes it,
// Spec.From opens episodes from it, as many as wanted. It lives in the
// session's directory until its last handle is closed. A handle is safe
// for concurrent use.
type Snapshot struct {
	d      *snapshotData
	closed atomic.Bool
}

// snapshotData is one snapshot on disk, shared by its handles.
type snapshotData struct {
	dir    string // removed with the last handle
	image  string // the quota image's copy; "" for a tree copy
	method string
	bytes  int64
	refs   atomic.Int64
}

// Snapshot takes a frozen copy of the episode's directories, between turns
// (no turn running), as copy-on-write as the host allows:
//
//   - with a quota (limits.disk), the episode's file system is frozen
//     (FIFREEZE: its writes are flushed and every writer, a background
//     process of the harness too, blocks) while its image is cloned
//     (FICLONE where the host file system has reflinks, else its data
//     extents copied), then thawed; the copy is a consistent file system
//     whatever ran meanwhile;
//   - without one, the three trees are copied (modes without set-id bits,
//     owners, symlinks, hard links, timestamps; files cloned where the
//     host allows). Nothing is frozen: the copy is consistent when nothing
//     of the harness writes meanwhile, which holds between turns unless the
//     agent left a background process writing. The trees are read
//     through os.Root, so a link the harness swaps in meanwhile cannot
//     lead the copy outside them.
//
// The caller owns the returned handle (Close it).
func (ep *Episode) Snapshot(ctx context.Context) (*Snapshot, error) {
	if ep.level < LevelDirectories || ep.dirs.Root == "" {
		return nil, errors.New("snapshot: the episode has no directories yet")
	}
	// One at a time: a second freeze of a frozen file system fails.
	ep.snapMu.Lock()
	defer ep.snapMu.Unlock()
	dir, err := os.MkdirTemp(ep.env.Dir, ".snapshot-")
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	d := &snapshotData{dir: dir}
	d.refs.Store(1)
	if err := ep.snapshotInto(ctx, d); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	b, err := treecopy.Bytes(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	d.bytes = b
	return &Snapshot{d: d}, nil
}

// snapshotInto fills d from the episode's directories.
func (ep *Episode) snapshotInto(ctx context.Context, d *snapshotData) error {
	if ep.disk != nil {
		d.image = filepath.Join(d.dir, snapshotImage)
		m, err := ep.disk.Snapshot(ctx, d.image)
		if err != nil {
			return fmt.Errorf("snapshot the episode's disk: %w", err)
		}
		d.method = SnapshotImageCopy
		if m == quota.MethodReflink {
			d.method = SnapshotReflink
		}
		return nil
	}
	d.method = SnapshotTreeCopy
	for i, src := range []string{ep.dirs.Workspace, ep.dirs.Home, ep.dirs.Tmp} {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := treecopy.Copy(ctx, src, filepath.Join(d.dir, dirNames[i]), true); err != nil {
			return fmt.Errorf("snapshot %s: %w", src, err)
		}
	}
	return nil
}

// Method names how the snapshot was taken: SnapshotReflink,
// SnapshotImageCopy or SnapshotTreeCopy.
func (s *Snapshot) Method() string { return s.d.method }

// Bytes is what the snapshot occupies on the host (its files' allocated
// blocks, st_blocks). A reflinked image counts its shared extents in full:
// an upper bound of what it costs once the episode rewrites them.
func (s *Snapshot) Bytes() int64 { return s.d.bytes }

// Retain returns another handle of the same snapshot (nil when s is
// closed): the snapshot stays until every handle is closed.
func (s *Snapshot) Retain() *Snapshot {
	for !s.closed.Load() {
		// Never from 0: the last Close may be removing it meanwhile.
		n := s.d.refs.Load()
		if n <= 0 {
			break
		}
		if s.d.refs.CompareAndSwap(n, n+1) {
			return &Snapshot{d: s.d}
		}
	}
	return nil
}

// Close drops this handle (idempotent); the last handle's Close removes
// the snapshot from disk.
func (s *Snapshot) Close() error {
	if s == nil || !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if s.d.refs.Add(-1) > 0 {
		return nil
	}
	if err := os.RemoveAll(s.d.dir); err != nil {
		return fmt.Errorf("remove snapshot: %w", err)
	}
	return nil
}

// restoreDirectories fills the fresh episode directory d from the
// snapshot (Spec.From) instead of the template: a quota image is copied
// again (reflink or data extents) and mounted, a tree copy is copied into
// the episode's directories (on the session's quota, if it applies). It
// pushes the disk's undo. Either way the result is owned as a fresh
// episode's is: by the daemon, until the sandbox hands it to its harness
// (sandbox.Run), and nothing but the workspace, HOME and TMPDIR is kept
// (the parent's MCP config, its bridge token in it, its /logs and
// identity files are not the sibling's).
func (ep *Episode) restoreDirectories(ctx context.Context, d Dirs, s *Snapshot) error {
	if s.closed.Load() {
		return errors.New("restore the episode's directories: the snapshot is closed")
	}
	if s.d.image != "" {
		fs, _, err := quota.MountImage(ctx, d.Root, d.Root+".img", s.d.image)
		if err != nil {
			return fmt.Errorf("restore the episode's disk from a snapshot: %w", err)
		}
		ep.pushDisk(fs)
		if err := keepOnly(d.Root, dirNames); err != nil {
			return fmt.Errorf("restore the episode's directories: %w", err)
		}
		if err := makeDirs(d, ""); err != nil {
			return err
		}
		if err := ownAll(d.Root); err != nil {
			return fmt.Errorf("restore the episode's directories: %w", err)
		}
		return nil
	}
	if err := ep.openDisk(ctx, d.Root); err != nil {
		return err
	}
	if err := makeDirs(d, ""); err != nil {
		return err
	}
	for i, dst := range []string{d.Workspace, d.Home, d.Tmp} {
		if err := treecopy.Copy(ctx, filepath.Join(s.d.dir, dirNames[i]), dst, false); err != nil {
			return fmt.Errorf("restore %s from a snapshot: %w", dst, err)
		}
	}
	return nil
}

// keepOnly removes every entry of dir but those named in keep.
func keepOnly(dir string, keep []string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !contains(keep, e.Name()) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ownAll gives everything below dir that is not the daemon's to the
// daemon's uid and gid (symlinks not followed). dir is private to the
// daemon (a restored episode's, before any sandbox has it), so paths are
// walked as they are.
func ownAll(dir string) error {
	uid, gid := os.Geteuid(), os.Getegid()
	return filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != uid || int(st.Gid) != gid) {
			return os.Lchown(p, uid, gid)
		}
		return nil
	})
}
