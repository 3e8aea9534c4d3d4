package quota

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Clone methods, as CloneFile and FS.Snapshot report them.
const (
	// MethodReflink: the copy shares the source's extents (FICLONE on a
	// file system with reflinks: xfs with reflink=1, btrfs); it costs
	// metadata until either side writes.
	MethodReflink = "reflink"
	// MethodExtents: the source's data extents copied at their offsets
	// (SEEK_DATA/SEEK_HOLE + copy_file_range); holes stay holes.
	MethodExtents = "extents"
)

// The freeze ioctls of linux/fs.h (_IOWR('X', 119, int) and
// _IOWR('X', 120, int)), which golang.org/x/sys does not name.
const (
	ioctlFIFREEZE = 0xC0045877
	ioctlFITHAW   = 0xC0045878
)

// CloneFile copies the regular file src into dst (empty, open for
// writing) as cheaply as the host allows: FICLONE where both lie on one
// file system with reflinks, else the data extents only, in chunks of
// copyChunk between which ctx is checked (a reflink is one call). dst ends
// with src's size. It reports which method it used.
func CloneFile(ctx context.Context, src, dst *os.File) (string, error) {
	err := unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
	if err == nil {
		return MethodReflink, nil
	}
	// EOPNOTSUPP/ENOTTY: no reflinks here; EXDEV: another file system;
	// EINVAL: a file system that refuses this pair. Anything else is a
	// real failure of a file system that would have cloned.
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOTTY) && !errors.Is(err, unix.EXDEV) &&
		!errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
		return "", fmt.Errorf("quota: clone %s: %w", src.Name(), err)
	}
	fi, err := src.Stat()
	if err != nil {
		return "", fmt.Errorf("quota: clone %s: %w", src.Name(), err)
	}
	if err := copyExtents(ctx, src, dst, fi.Size()); err != nil {
		return "", fmt.Errorf("quota: copy %s: %w", src.Name(), err)
	}
	return MethodExtents, nil
}

// copyChunk is the most one copy_file_range call copies: the copy notices
// a cancelled context within one chunk (~30 ms on a disk of 2 GB/s).
const copyChunk = 64 << 20

// copyExtents copies src's data extents below size into dst at their
// offsets and sizes dst to size: holes stay holes. A file system without
// SEEK_DATA (EINVAL) is copied whole.
func copyExtents(ctx context.Context, src, dst *os.File, size int64) error {
	if err := dst.Truncate(size); err != nil {
		return err
	}
	fin, fout := int(src.Fd()), int(dst.Fd())
	var off int64
	for off < size {
		data, err := unix.Seek(fin, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // no data after off
		}
		if errors.Is(err, unix.EINVAL) && off == 0 {
			data, err = 0, nil
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(fin, data, unix.SEEK_HOLE)
		if errors.Is(err, unix.EINVAL) {
			hole, err = size, nil
		}
		if err != nil {
			return err
		}
		hole = min(hole, size)
		for r, w := data, data; r < hole; {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, err := unix.CopyFileRange(fin, &r, fout, &w, int(min(hole-r, copyChunk)), 0)
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
				// No in-kernel copy between these two: copy through user space.
				if _, err := io.Copy(io.NewOffsetWriter(dst, w), io.NewSectionReader(src, r, hole-r)); err != nil {
					return err
				}
				break
			}
			if err != nil {
				return err
			}
			if n == 0 {
				return errors.New("the source shrank while it was copied")
			}
		}
		off = hole
	}
	return nil
}

// Freeze blocks every write to the file system (FIFREEZE: its dirty data
// and metadata are written out first, so the image holds a consistent
// file system while frozen); readers go on. Thaw undoes it. A writer
// blocks until Thaw, in whichever mount namespace it writes.
func (f *FS) Freeze() error { return freezeIoctl(f.Dir, ioctlFIFREEZE, "freeze") }

// Thaw lets writers of a frozen file system go on (FITHAW).
func (f *FS) Thaw() error { return freezeIoctl(f.Dir, ioctlFITHAW, "thaw") }

// FreezeWait bounds how long Snapshot waits for the file system to
// freeze. A freeze waits for every write in progress to end, and a writer
// can hold one open for as long as it likes (splice from an empty pipe
// into a file of the file system): the red team's harness kept a step
// from ever answering that way, a daemon thread in the freeze for good.
const FreezeWait = 10 * time.Second

// ErrFreezeTimedOut marks a Snapshot whose freeze did not happen within
// FreezeWait (or before its context ended), or found an earlier such
// freeze still waiting.
var ErrFreezeTimedOut = errors.New("the file system did not freeze in time: a writer holds a write open")

// freezeState is a freeze Snapshot stopped waiting for: the kernel's
// freeze goes on until the writer ends (for a harness, when it is
// stopped), and is then undone at once.
type freezeState struct {
	mu        sync.Mutex
	pending   bool          // a FIFREEZE has not returned yet
	abandoned bool          // and its caller gave up: thaw when it does
	over      chan struct{} // closed when the pending one has returned (and been undone)
}

// waitFreeze waits, at most FreezeWait, for a freeze Snapshot gave up on
// to return and be undone: Unmount's, once the writer holding it off (a
// process of the stopped harness) is gone, so that the file system is
// not unmounted frozen.
func (f *FS) waitFreeze() {
	f.fz.mu.Lock()
	pending, over := f.fz.pending, f.fz.over
	f.fz.mu.Unlock()
	if !pending {
		return
	}
	t := time.NewTimer(FreezeWait)
	defer t.Stop()
	select {
	case <-over:
	case <-t.C:
	}
}

// freezeWithin freezes the file system, waiting at most d or until ctx
// ends. A freeze not done by then is left to its own goroutine, which
// thaws the file system when the kernel's freeze returns (the writer
// holding it off has ended) and then ends; until it has, every later
// freezeWithin fails at once. Writers to the file system wait meanwhile,
// as for any freeze in progress.
func (f *FS) freezeWithin(ctx context.Context, d time.Duration) error {
	f.fz.mu.Lock()
	if f.fz.pending {
		f.fz.mu.Unlock()
		return fmt.Errorf("quota: freeze %s: %w (an earlier freeze still waits for it)", f.Dir, ErrFreezeTimedOut)
	}
	// One descriptor for the freeze and, when it is abandoned, its thaw:
	// by then an Unmount may have detached Dir, which no longer names
	// this file system.
	dir, err := os.Open(f.Dir)
	if err != nil {
		f.fz.mu.Unlock()
		return fmt.Errorf("quota: freeze %s: %w", f.Dir, err)
	}
	f.fz.pending, f.fz.over = true, make(chan struct{})
	over := f.fz.over
	f.fz.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		defer dir.Close()
		err := ioctlOn(dir, ioctlFIFREEZE, "freeze", f.Dir)
		f.fz.mu.Lock()
		defer f.fz.mu.Unlock()
		if f.fz.abandoned && err == nil {
			ioctlOn(dir, ioctlFITHAW, "thaw", f.Dir)
		}
		f.fz.pending, f.fz.abandoned = false, false
		close(over)
		done <- err
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	case <-t.C:
	}
	f.fz.mu.Lock()
	defer f.fz.mu.Unlock()
	select {
	case err := <-done: // it returned meanwhile: frozen, the caller thaws
		return err
	default:
	}
	f.fz.abandoned = true
	return fmt.Errorf("quota: freeze %s: %w (waited %s)", f.Dir, ErrFreezeTimedOut, d)
}

func freezeIoctl(dir string, req uint, what string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("quota: %s %s: %w", what, dir, err)
	}
	defer d.Close()
	return ioctlOn(d, req, what, dir)
}

// ioctlOn is freezeIoctl's request on the open directory d (named name).
func ioctlOn(d *os.File, req uint, what, name string) error {
	if err := unix.IoctlSetInt(int(d.Fd()), req, 0); err != nil {
		return fmt.Errorf("quota: %s %s: %w", what, name, err)
	}
	return nil
}

// ThawBelow thaws every file system mounted at or below dir that a daemon
// killed during a snapshot left frozen (its writers would otherwise block
// for good, even after a lazy unmount). One not frozen is left alone.
func ThawBelow(dir string) {
	mps, err := mountPoints()
	if err != nil {
		return
	}
	dir = filepath.Clean(dir)
	for _, m := range mps {
		if m == dir || strings.HasPrefix(m, dir+"/") {
			freezeIoctl(m, ioctlFITHAW, "thaw") // EINVAL: not frozen
		}
	}
}

// Snapshot writes a point-in-time copy of the file system's image to the
// new file image: the file system is frozen (Freeze) for the copy (a
// cancelled ctx ends the copy and thaws it), which
// is a reflink where the host file system has them, else a copy of the
// image's data extents only (a 10 GiB image holding 1 MiB costs about
// 1 MiB plus the file system's metadata). It reports the method used. The
// copy is an image MountImage mounts.
func (f *FS) Snapshot(ctx context.Context, image string) (method string, err error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	src, err := os.Open(f.Image)
	if err != nil {
		return "", fmt.Errorf("quota: snapshot: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(image, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("quota: snapshot: %w", err)
	}
	defer func() {
		if cerr := dst.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("quota: snapshot: %w", cerr)
		}
		if err != nil {
			os.Remove(image)
		}
	}()
	if err := f.freezeWithin(ctx, FreezeWait); err != nil {
		return "", err
	}
	method, err = CloneFile(ctx, src, dst)
	if terr := f.Thaw(); terr != nil && err == nil {
		err = terr
	}
	if err != nil {
		return "", fmt.Errorf("quota: snapshot %s: %w", f.Dir, err)
	}
	if err := markClean(dst); err != nil {
		return "", fmt.Errorf("quota: snapshot %s: %w", f.Dir, err)
	}
	return method, nil
}

// ext4 superblock layout (linux/fs/ext4/ext4.h): at byte 1024 of the
// image, its fields at these offsets.
const (
	sbOffset       = 1024
	sbSize         = 1024
	sbMagic        = 0x38 // le16, 0xEF53
	sbState        = 0x3A // le16
	sbFeatureRO    = 0x64 // le32
	sbChecksumType = 0x175
	sbChecksum     = 0x3FC // le32: crc32c of the bytes before it

	ext4Magic        = 0xEF53
	ext4ValidFS      = 0x0001 // s_state: cleanly unmounted
	ext4ErrorFS      = 0x0002
	ext4MetadataCsum = 0x400 // ro_compat
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ext4Checksum is the superblock checksum as the kernel computes it:
// crc32c seeded with ~0, without the final inversion.
func ext4Checksum(sb []byte) uint32 { return ^crc32.Checksum(sb[:sbChecksum], castagnoli) }

// markClean marks the ext4 file system in the image f as cleanly
// unmounted (s_state's VALID_FS, the superblock's checksum updated). A
// file system mounted without a journal is marked not clean while
// mounted, and its frozen copy says so; but a frozen file system is
// consistent (freezing wrote everything out), so the copy may say it is
// clean, and each episode mounted from it does not log "mounting unchecked
// fs" to the kernel log. A superblock it does not recognise (not ext4, an
// error recorded, a checksum it cannot reproduce) is left as it is.
func markClean(f *os.File) error {
	sb := make([]byte, sbSize)
	if _, err := f.ReadAt(sb, sbOffset); err != nil {
		return fmt.Errorf("read the superblock: %w", err)
	}
	le := binary.LittleEndian
	state := le.Uint16(sb[sbState:])
	if le.Uint16(sb[sbMagic:]) != ext4Magic || state&ext4ErrorFS != 0 || state&ext4ValidFS != 0 {
		return nil
	}
	csum := le.Uint32(sb[sbFeatureRO:])&ext4MetadataCsum != 0
	if csum && (sb[sbChecksumType] != 1 || ext4Checksum(sb) != le.Uint32(sb[sbChecksum:])) {
		return nil
	}
	le.PutUint16(sb[sbState:], state|ext4ValidFS)
	if csum {
		le.PutUint32(sb[sbChecksum:], ext4Checksum(sb))
	}
	if _, err := f.WriteAt(sb, sbOffset); err != nil {
		return fmt.Errorf("write the superblock: %w", err)
	}
	return nil
}

// MountImage mounts a copy of the image from (one FS.Snapshot wrote) on
// dir, as Mount does a fresh one: the copy is the new file system's own
// image (a reflink where the host has them, else from's data extents), of
// from's size; from stays as it was, for more copies. It reports the
// method used.
func MountImage(ctx context.Context, dir, image, from string) (*FS, string, error) {
	src, err := os.Open(from)
	if err != nil {
		return nil, "", fmt.Errorf("quota: open the snapshot image: %w", err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("quota: open the snapshot image: %w", err)
	}
	var method string
	fs, err := mountWith(ctx, dir, image, fi.Size(), func(dst *os.File) error {
		m, err := CloneFile(ctx, src, dst)
		method = m
		return err
	})
	return fs, method, err
}
