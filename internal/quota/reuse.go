package quota

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Reuse of a mounted file system by a later writer (an episode after the
// one that used it): Empty puts it back to the state it was mounted in,
// so that making, attaching, mounting, unmounting and detaching a fresh
// one is paid once for many writers instead of once each.

// ErrNotFresh marks an Empty that removed what it could but found the file
// system not as it was mounted: the caller must not hand it on (unmount
// it instead).
var ErrNotFresh = errors.New("quota: the file system is not back to fresh")

// MaxReuseInodes is the most files and directories a file system may hold
// for Empty to remove them one by one: above it, unmounting it and making
// a fresh one costs less than emptying it.
const MaxReuseInodes = 4096

// Empty removes everything below the file system's root and checks that
// it is back to fresh, the usage Usage returned right after it was
// mounted: as many inodes in use and exactly as much space available (no
// file left, none deleted but still held open by a process, no directory
// grown in the root), its root private (mode 0700), owned by the caller
// and carrying no extended attribute. A file's data blocks, once freed,
// are not readable through the file system again: a later writer's new
// blocks read as what it wrote or as zeros. Anything else is ErrNotFresh
// (or the removal's error): the file system must then be unmounted, not
// reused. It must not run while any other process may still write below
// the root.
func (f *FS) Empty(fresh Usage) error { return f.EmptyKeeping(fresh, nil) }

// EmptyKeeping is Empty for a file system whose top-level directories
// keep stay, as themselves (a sandbox kept with the file system has them
// bound): everything else below the root and everything inside them is
// removed, and each of them is put back to private (mode 0700), owned by
// the caller, without extended attributes. skeleton is Usage right after
// they were made in the fresh file system: the usage must be exactly that
// again (a directory the last writer grew, a file still held open, makes
// it ErrNotFresh). Their times become the time of the emptying, as a
// directory made then would have, and the inode flags a writer may set
// (chattr: no dump, no atime, sync...) are cleared.
func (f *FS) EmptyKeeping(skeleton Usage, keep []string) error {
	u, err := f.Usage()
	if err != nil {
		return err
	}
	if used := u.Inodes - u.FreeInodes; used > skeleton.Inodes-skeleton.FreeInodes+MaxReuseInodes {
		return fmt.Errorf("%w: %d files and directories are cheaper to drop with the file system than to remove", ErrNotFresh, used)
	}
	if err := emptyBelow(f.Dir, keep); err != nil {
		return err
	}
	if u, err = f.Usage(); err != nil {
		return err
	}
	if u.Inodes-u.FreeInodes != skeleton.Inodes-skeleton.FreeInodes || u.Avail != skeleton.Avail || u.Total != skeleton.Total {
		return fmt.Errorf("%w: %d inodes in use and %d bytes available, %d and %d fresh",
			ErrNotFresh, u.Inodes-u.FreeInodes, u.Avail, skeleton.Inodes-skeleton.FreeInodes, skeleton.Avail)
	}
	return nil
}

// emptyBelow removes everything below root but the directories keep
// (not links to them), and everything inside those, in one pass that
// counts the names it removes and fails with ErrNotFresh past
// MaxReuseInodes (remove.go); then gives each of them and root back
// (resetDir). Each directory is opened once for all of it.
func emptyBelow(root string, keep []string) error {
	d, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("quota: empty %s: %w", root, err)
	}
	defer unix.Close(d)
	b := &names{left: MaxReuseInodes}
	skip := make(map[string]bool, len(keep))
	for _, k := range keep {
		skip[k] = true
		if err := emptyKept(d, filepath.Join(root, k), k, b); err != nil {
			return err
		}
	}
	if err := removeIn(d, skip, b); err != nil {
		return fmt.Errorf("quota: empty %s: %w", root, err)
	}
	return resetDir(d, root)
}

// emptyKept empties the kept directory name of the root rootfd (path
// for messages) and gives it back (resetDir).
func emptyKept(rootfd int, path, name string, b *names) error {
	fd, err := unix.Openat(rootfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("%w: %s is no longer a directory", ErrNotFresh, path)
	}
	if err != nil {
		return fmt.Errorf("quota: empty %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := removeIn(fd, nil, b); err != nil {
		return fmt.Errorf("quota: empty %s: %w", path, err)
	}
	return resetDir(fd, path)
}

// resetDir gives the directory fd (path for messages) back to the
// caller, mode 0700, checks it carries no extended attribute (an ACL is
// one), gives it the times of now and clears its user-settable inode
// flags (none where the file system has no flags).
func resetDir(fd int, path string) error {
	if err := unix.Fchown(fd, os.Getuid(), os.Getgid()); err != nil {
		return fmt.Errorf("quota: empty %s: %w", path, err)
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return fmt.Errorf("quota: empty %s: %w", path, err)
	}
	if n, err := unix.Flistxattr(fd, nil); err != nil && !errors.Is(err, unix.ENOTSUP) {
		return fmt.Errorf("quota: empty %s: list its extended attributes: %w", path, err)
	} else if n > 0 {
		return fmt.Errorf("%w: %s carries extended attributes", ErrNotFresh, path)
	}
	// utimensat(fd, NULL, NULL): futimens to now.
	if _, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("quota: empty %s: reset its times: %w", path, e)
	}
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("quota: empty %s: read its inode flags: %w", path, err)
	}
	if flags&userFlags == 0 {
		return nil
	}
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags&^userFlags)); err != nil {
		return fmt.Errorf("quota: empty %s: clear its inode flags: %w", path, err)
	}
	return nil
}

// userFlags are the inode flags (FS_IOC_SETFLAGS) a directory's owner
// may set without a capability, and the ones that need one: none is a
// fresh directory's.
const userFlags = 0x000380FF | 0x00800000 | 0x20000000 // FS_FL_USER_MODIFIABLE, FS_NOCOW_FL, FS_PROJINHERIT_FL
