package quota

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// names is how many more names an emptying may remove: hard links are
// names without inodes, so the inode count alone does not bound the
// removal's work. Every name is counted as it is read, before it is
// removed, so one pass both bounds and removes (an emptying used to walk
// the tree once to count and again to remove).
type names struct {
	left  int
	depth int    // the directories open beneath the emptied one
	buf   []byte // what a directory is read into; its names are parsed out before any is removed
}

// maxRemoveDepth bounds the directories an emptying holds open at once,
// one per level: a tree deeper than this (which only a harness making it
// on purpose has) is cheaper to drop with the file system than to walk.
const maxRemoveDepth = 128

// errTooDeep: the file system's tree is deeper than maxRemoveDepth.
var errTooDeep = fmt.Errorf("%w: a tree deeper than %d directories is cheaper to drop with the file system than to remove", ErrNotFresh, maxRemoveDepth)

// errTooManyNames: the file system holds more names than the bound.
var errTooManyNames = fmt.Errorf("%w: more than %d names are cheaper to drop with the file system than to remove", ErrNotFresh, MaxReuseInodes)

// take counts n names, failing past the bound.
func (b *names) take(n int) error {
	if b.left -= n; b.left < 0 {
		return errTooManyNames
	}
	return nil
}

// direntBuffer is how much of a directory removeIn reads at once (the
// bound is checked per read, so at most one read's names past it).
const direntBuffer = 8 << 10

// removeIn removes every entry of the directory dirfd (which stays) but
// those named in skip, subdirectories depth first, counting each name
// against b. It follows no link: entries are opened and removed relative
// to their directory's descriptor, never by path. The directory is read
// once, removing as it goes; an entry a reader that goes on would miss
// shows as a directory that is not empty (removeAt reads it again) or, in
// a kept one, in the usage the caller checks.
func removeIn(dirfd int, skip map[string]bool, b *names) error {
	if b.buf == nil {
		b.buf = make([]byte, direntBuffer)
	}
	for {
		n, err := unix.Getdents(dirfd, b.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read a directory: %w", err)
		}
		if n <= 0 {
			return nil
		}
		_, _, batch := unix.ParseDirent(b.buf[:n], -1, nil)
		if err := b.take(len(batch)); err != nil {
			return err
		}
		for _, name := range batch {
			if skip[name] {
				continue
			}
			if err := removeAt(dirfd, name, b); err != nil {
				return err
			}
		}
	}
}

// removeAt removes the entry name of the directory dirfd, and everything
// below it when it is a directory.
func removeAt(dirfd int, name string, b *names) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	// A second read of a directory the first one left entries in: at most
	// one more, each bounded by b.
	for range 2 {
		if err := removeDirIn(dirfd, name, b); err != nil {
			return err
		}
		err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.ENOTEMPTY) {
			break
		}
	}
	return fmt.Errorf("remove %s: %w", name, err)
}

// removeDirIn opens the directory name of dirfd (not a link to one) and
// removes everything in it.
func removeDirIn(dirfd int, name string, b *names) error {
	if b.depth >= maxRemoveDepth {
		return errTooDeep
	}
	b.depth++
	defer func() { b.depth-- }()
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer unix.Close(fd)
	return removeIn(fd, nil, b)
}
