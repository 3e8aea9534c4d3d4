// Package quota bounds what can be written below a directory by giving the
// directory a file system of its own, of a fixed size: a sparse image file
// formatted ext4 (no journal, inode tables left lazily uninitialised, no
// reserved blocks), attached to a loop device that clears itself
// (LO_FLAGS_AUTOCLEAR) and mounted on the directory (nosuid, nodev). A
// writer that reaches the size gets ENOSPC; the host's file system holds at
// most the image's written blocks, never more than the size.
//
// The loop device goes away by itself when the file system's last mount
// does (the daemon's unmount, or the kernel's when every mount namespace
// that held a copy has ended): a daemon killed with SIGKILL leaves at most
// the mounts, which UnmountBelow removes at the next start.
//
// It needs CAP_SYS_ADMIN (loop devices and mounts), /dev/loop-control and
// mke2fs from e2fsprogs; Mount says which is missing. The package knows
// nothing of episodes, sessions or sandboxes: callers choose the image's
// path and the mount point.
package quota

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/process"
	"golang.org/x/sys/unix"
)

// MinSize is the smallest size Mount accepts: ext4's metadata needs room.
const MinSize = 1 << 20

// ErrUnsupported marks the errors that say this host cannot make quota
// file systems at all (no mke2fs, no loop devices, no permission to
// attach or mount, no ext4), as opposed to one that failed (a full disk,
// a cancelled context).
var ErrUnsupported = errors.New("this host cannot make quota file systems")

// unsupported marks err as ErrUnsupported when its errno says the host
// lacks the mechanism or the permission.
func unsupported(err error) error {
	for _, e := range []error{unix.EPERM, unix.EACCES, unix.ENODEV, unix.ENOENT, unix.ENXIO, unix.ENOSYS, unix.ENOTTY} {
		if errors.Is(err, e) {
			return fmt.Errorf("%w (%w)", err, ErrUnsupported)
		}
	}
	return err
}

// FS is one mounted size-limited file system.
type FS struct {
	// Dir is the mount point.
	Dir string
	// Image is the backing file.
	Image string
	// Size is the image's size in bytes (the file system's own metadata
	// takes a few per cent of it).
	Size int64
	// Device is the loop device (/dev/loopN).
	Device string

	once sync.Once
	err  error

	// root is a descriptor of the file system's root (O_PATH, close on
	// exec), opened by the first Usage so that the next ones are one
	// fstatfs instead of a statfs that walks Dir; Unmount closes it
	// first, so it never keeps the file system busy. Empty keeps it: the
	// root is never removed, and the descriptor holds no inode or block
	// of its own. rootMu guards it.
	rootMu    sync.Mutex
	root      int
	rootOpen  bool
	unmounted bool

	// fz is a freeze that Snapshot stopped waiting for (freezeWithin).
	fz freezeState
}

// mkfsFlags format a scratch file system: no journal (it never outlives a
// crash), no blocks reserved for growing it online (resize_inode: 4.1 MB
// of a 10 GiB image's 4.3 MB of data, copied into every episode's image
// from the template), inode tables not zeroed (lazy_itable_init, with noinit_itable at
// mount: nothing ever writes them in the background), no discard pass over
// a fresh sparse file, no blocks reserved for root.
var mkfsFlags = []string{"-q", "-F", "-t", "ext4", "-O", "^has_journal,^resize_inode", "-E", "lazy_itable_init=1,nodiscard", "-m", "0"}

// mountOptions are the file system's mount data.
const mountOptions = "noinit_itable"

// mke2fs finds mke2fs (or mkfs.ext4) on PATH or in the sbin directories a
// daemon's PATH may lack.
var mke2fs = sync.OnceValues(func() (string, error) {
	for _, name := range []string{"mke2fs", "mkfs.ext4"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
			p := filepath.Join(d, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("quota: mke2fs (e2fsprogs) not found on PATH or in /usr/sbin, /sbin (%w)", ErrUnsupported)
})

// Mount makes image a sparse file of size bytes, formats it, attaches it to
// a free loop device and mounts it on dir (created if missing; it must be
// empty). The file system's root gets mode 0700, owned by the caller, and
// holds nothing. On error nothing is left mounted or attached, and image
// is removed.
func Mount(ctx context.Context, dir, image string, size int64) (*FS, error) {
	return mountWith(ctx, dir, image, size, func(f *os.File) error { return format(ctx, f, size) })
}

// mountWith is Mount with fill writing the formatted file system into the
// fresh image f.
func mountWith(ctx context.Context, dir, image string, size int64, fill func(*os.File) error) (*FS, error) {
	if size < MinSize {
		return nil, fmt.Errorf("quota: size %d bytes is below the minimum of %d", size, MinSize)
	}
	if _, err := mke2fs(); err != nil {
		return nil, err
	}
	// Fail fast, before formatting, where there are no loop devices.
	if err := unix.Access("/dev/loop-control", unix.R_OK|unix.W_OK); err != nil {
		return nil, unsupported(fmt.Errorf("quota: no loop devices (/dev/loop-control): %w", err))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("quota: create the mount point: %w", err)
	}
	f, err := os.OpenFile(image, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("quota: create the image: %w", err)
	}
	ok := false
	defer func() {
		f.Close()
		if !ok {
			os.Remove(image)
		}
	}()
	if err := fill(f); err != nil {
		return nil, err
	}
	dev, loop, err := attach(f)
	if err != nil {
		return nil, err
	}
	// The loop device's only opener is loop; once the file system holds
	// the device, closing it lets autoclear detach it at the last unmount
	// (or now, if the mount fails).
	defer loop.Close()
	if err := unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, mountOptions); err != nil {
		return nil, unsupported(fmt.Errorf("quota: mount %s on %s: %w", dev, dir, err))
	}
	fs := &FS{Dir: dir, Image: image, Size: size, Device: dev}
	if err := prepareRoot(dir); err != nil {
		fs.Unmount()
		return nil, err
	}
	ok = true
	return fs, nil
}

// format sizes the empty image f and formats it with mke2fs.
func format(ctx context.Context, f *os.File, size int64) error {
	mkfs, err := mke2fs()
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("quota: size the image: %w", err)
	}
	cmd := exec.CommandContext(ctx, mkfs, append(append([]string(nil), mkfsFlags...), f.Name())...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A tracked child: the daemon's orphan reaper (process.ReapOrphans)
	// would otherwise take mke2fs's exit status before cmd.Wait does
	// ("waitid: no child processes").
	if err := process.StartCommand(cmd); err != nil {
		return fmt.Errorf("quota: format the image (%s): %w", mkfs, err)
	}
	err = cmd.Wait()
	process.ReleaseCommand(cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("quota: format the image (%s): %w: %s", mkfs, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// Maker mounts file systems of one size from one formatted image: the
// first Mount formats a template image (mke2fs), every one copies the
// template's written extents (a few MiB of metadata, even for tens of
// GiB) into its own sparse image, which costs a fraction of formatting.
// The copies share the template's file system UUID, which ext4 does not
// mind. Its methods are safe for concurrent use.
type Maker struct {
	template string
	size     int64

	mu sync.Mutex
	ok bool // the template is made
}

// NewMaker returns a Maker of size-byte file systems whose template image
// is the file template (made at the first Mount; the caller removes it).
func NewMaker(template string, size int64) *Maker {
	return &Maker{template: template, size: size}
}

// Mount is Mount with the Maker's size, from its template.
func (m *Maker) Mount(ctx context.Context, dir, image string) (*FS, error) {
	if err := m.prepare(ctx); err != nil {
		return nil, err
	}
	return mountWith(ctx, dir, image, m.size, func(f *os.File) error { return copySparse(m.template, f, m.size) })
}

// prepare formats the template once; a failure is retried by the next
// call (it may have been the context's).
func (m *Maker) prepare(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ok {
		return nil
	}
	if m.size < MinSize {
		return fmt.Errorf("quota: size %d bytes is below the minimum of %d", m.size, MinSize)
	}
	tmp := m.template + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("quota: create the template image: %w", err)
	}
	err = format(ctx, f, m.size)
	f.Close()
	if err == nil {
		err = os.Rename(tmp, m.template)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	m.ok = true
	return nil
}

// copySparse copies src's data extents into dst at their offsets and sizes
// dst to size: holes stay holes.
func copySparse(src string, dst *os.File, size int64) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("quota: open the template image: %w", err)
	}
	defer in.Close()
	if err := dst.Truncate(size); err != nil {
		return fmt.Errorf("quota: size the image: %w", err)
	}
	fin, fout := int(in.Fd()), int(dst.Fd())
	var off int64
	for off < size {
		data, err := unix.Seek(fin, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // no data after off
		}
		if err != nil {
			return fmt.Errorf("quota: read the template image: %w", err)
		}
		hole, err := unix.Seek(fin, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("quota: read the template image: %w", err)
		}
		for r, w := data, data; r < hole; {
			n, err := unix.CopyFileRange(fin, &r, fout, &w, int(hole-r), 0)
			if err != nil {
				return fmt.Errorf("quota: copy the template image: %w", err)
			}
			if n == 0 {
				return errors.New("quota: copy the template image: it shrank")
			}
		}
		off = hole
	}
	return nil
}

// prepareRoot leaves the new file system's root empty (lost+found is for a
// fsck that a scratch file system never gets) and private.
func prepareRoot(dir string) error {
	if err := os.Remove(filepath.Join(dir, "lost+found")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("quota: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("quota: %w", err)
	}
	return nil
}

// attachMu makes finding a free loop device and binding it one step
// within this process.
var attachMu sync.Mutex

// attach binds the image open as f to a free loop device, autoclearing; it
// returns the device's path and an open descriptor of it.
func attach(f *os.File) (string, *os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return "", nil, unsupported(fmt.Errorf("quota: no loop devices: %w", err))
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(f.Fd())}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	copy(cfg.Info.File_name[:], f.Name())
	// Another process may take the free device between the two calls:
	// try the next one. Within this process the two calls are one step
	// (attachMu): every episode of a burst of resets would otherwise race
	// for the same first free device, and all but one lose each round.
	attachMu.Lock()
	defer attachMu.Unlock()
	var last error
	for range 64 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", nil, unsupported(fmt.Errorf("quota: find a free loop device: %w", err))
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		loop, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return "", nil, unsupported(fmt.Errorf("quota: open %s: %w", dev, err))
		}
		err = unix.IoctlLoopConfigure(int(loop.Fd()), &cfg)
		if err == nil {
			return dev, loop, nil
		}
		loop.Close()
		if !errors.Is(err, unix.EBUSY) {
			return "", nil, unsupported(fmt.Errorf("quota: attach the image to %s: %w", dev, err))
		}
		last = err
	}
	return "", nil, fmt.Errorf("quota: attach the image: every free loop device was taken first: %w", last)
}

// Usage is a file system's space and inodes.
type Usage struct {
	// Total and Avail are bytes: the file system's size (less its
	// metadata) and what an unprivileged writer may still write.
	Total, Avail int64
	// Inodes and FreeInodes count files.
	Inodes, FreeInodes uint64
}

// fullMargin: a file system with less than this available (or a 64th of
// it, if smaller) counts as full. ext4 keeps a few blocks back for its own
// allocations, so a writer that got ENOSPC leaves a few KiB "available".
const fullMargin = 1 << 20

// Full reports whether u is at its bound: almost no space or no inode left
// (writes fail with ENOSPC).
func (u Usage) Full() bool {
	margin := min(int64(fullMargin), u.Total/64)
	return u.Avail < margin || (u.Inodes > 0 && u.FreeInodes == 0)
}

// Usage reads the file system's space and inodes (an fstatfs of its
// root, kept open from the first call until Unmount). After Unmount it
// is an error: Dir is then no longer this file system.
func (f *FS) Usage() (Usage, error) {
	f.rootMu.Lock()
	defer f.rootMu.Unlock()
	if f.unmounted {
		return Usage{}, fmt.Errorf("quota: usage of %s: %w", f.Dir, ErrUnmounted)
	}
	if !f.rootOpen {
		fd, err := unix.Open(f.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return Usage{}, fmt.Errorf("quota: open %s: %w", f.Dir, err)
		}
		f.root, f.rootOpen = fd, true
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(f.root, &st); err != nil {
		return Usage{}, fmt.Errorf("quota: statfs %s: %w", f.Dir, err)
	}
	bs := st.Bsize
	return Usage{Total: int64(st.Blocks) * bs, Avail: int64(st.Bavail) * bs, Inodes: st.Files, FreeInodes: st.Ffree}, nil
}

// ErrUnmounted marks a Usage of a file system after its Unmount.
var ErrUnmounted = errors.New("the file system is unmounted")

// closeRoot closes the root's descriptor (Usage's) and makes later
// Usage calls fail: nothing of the daemon's holds the file system open
// once it returns.
func (f *FS) closeRoot() {
	f.rootMu.Lock()
	defer f.rootMu.Unlock()
	if f.rootOpen {
		unix.Close(f.root)
		f.rootOpen = false
	}
	f.unmounted = true
}

// Unmount closes the root's descriptor Usage keeps, unmounts the file
// system (lazily when it is busy: it goes once its last user does, and
// the loop device with it) and removes the image. The mount point stays.
// It is idempotent.
func (f *FS) Unmount() error {
	f.once.Do(func() {
		f.closeRoot()
		f.waitFreeze()
		var errs []error
		if err := unmount(f.Dir); err != nil {
			errs = append(errs, err)
		}
		if err := os.Remove(f.Image); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("quota: remove the image: %w", err))
		}
		f.err = errors.Join(errs...)
	})
	return f.err
}

// unmount unmounts dir, lazily when busy.
func unmount(dir string) error {
	err := unix.Unmount(dir, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("quota: unmount %s: %w", dir, err)
	}
	return nil
}

// Mounted reports whether dir is a mount point in the caller's mount
// namespace.
func Mounted(dir string) (bool, error) {
	mps, err := mountPoints()
	if err != nil {
		return false, err
	}
	dir = filepath.Clean(dir)
	for _, m := range mps {
		if m == dir {
			return true, nil
		}
	}
	return false, nil
}

// UnmountBelow unmounts every mount at or below dir (deepest first, lazily
// when busy) and returns the mount points it unmounted: what a daemon that
// is gone left mounted. The loop devices behind them detach by themselves.
func UnmountBelow(dir string) ([]string, error) {
	mps, err := mountPoints()
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	var below []string
	for _, m := range mps {
		if m == dir || strings.HasPrefix(m, dir+"/") {
			below = append(below, m)
		}
	}
	// Deepest first; a path mounted twice is unmounted twice.
	sort.SliceStable(below, func(i, j int) bool { return strings.Count(below[i], "/") > strings.Count(below[j], "/") })
	var errs []error
	var done []string
	for _, m := range below {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("quota: unmount %s: %w", m, err))
			continue
		}
		done = append(done, m)
	}
	return done, errors.Join(errs...)
}

// mountPoints lists the mount points of the caller's mount namespace.
func mountPoints() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("quota: read mountinfo: %w", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		out = append(out, unescape(fields[4]))
	}
	return out, sc.Err()
}

// unescape decodes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// LoopDevicesOf lists the loop devices whose backing file lies at or below
// dir (deleted images included), from /sys/block: for checks and tests.
func LoopDevicesOf(dir string) ([]string, error) {
	ents, err := os.ReadDir("/sys/block")
	if err != nil {
		return nil, fmt.Errorf("quota: %w", err)
	}
	dir = filepath.Clean(dir)
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "loop") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "loop", "backing_file"))
		if err != nil {
			continue // not attached
		}
		p := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, "/dev/"+e.Name())
		}
	}
	return out, nil
}

// Probe mounts and unmounts a smallest file system under dir: nil when
// this host can give directories a quota (root, loop devices, mke2fs,
// ext4), else what is missing.
func Probe(ctx context.Context, dir string) error {
	d, err := os.MkdirTemp(dir, "quota-probe-")
	if err != nil {
		return fmt.Errorf("quota: %w", err)
	}
	defer os.RemoveAll(d)
	fs, err := Mount(ctx, filepath.Join(d, "mnt"), filepath.Join(d, "img"), MinSize)
	if err != nil {
		return err
	}
	return fs.Unmount()
}
