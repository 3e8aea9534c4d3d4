package beneath

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MaxTreeDepth is how deep LchownTree goes beneath its directory: it holds
// one descriptor per level, and a tree deeper than this (which only a
// program making it on purpose has) is an error rather than a daemon out of
// descriptors.
const MaxTreeDepth = 512

// namesPerRead is how many names LchownTree reads from a directory at once,
// so that a directory of a million entries costs a batch, not a million
// names, at each level.
const namesPerRead = 1024

// LchownTree walks dir and gives each entry, dir included, the owner ids
// says for its current ones (none when ok is false, nothing when they are
// already its owners), never following a symbolic link and never leaving
// dir. Each entry is stat'ed, chowned and, a directory, opened relative to
// its parent's open descriptor (O_NOFOLLOW), never by a path from the
// host's root, where a directory a live process swapped for a link to /etc
// between the listing and the chown would hand /etc's files to whoever the
// ids name; an entry swapped meanwhile is handled as what it has become,
// and one removed meanwhile is skipped. dir itself may be anything (its
// parent is not someone else's): a file or a link is chowned alone. A tree
// deeper than MaxTreeDepth is an error.
func LchownTree(dir string, ids func(uid, gid uint32) (newUID, newGID int, ok bool)) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return lchownOne(dir, ids)
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	if uid, gid, ok := ids(st.Uid, st.Gid); ok && !owns(&st, uid, gid) {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return &os.PathError{Op: "chown", Path: dir, Err: err}
		}
	}
	return (&chownWalk{ids: ids}).entries(d, 1)
}

// lchownOne gives path alone (a file or a link, not followed) the ids.
func lchownOne(path string, ids func(uid, gid uint32) (int, int, bool)) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	if uid, gid, ok := ids(st.Uid, st.Gid); ok && !owns(&st, uid, gid) {
		return os.Lchown(path, uid, gid)
	}
	return nil
}

// owns reports whether st's owners are already uid and gid.
func owns(st *unix.Stat_t, uid, gid int) bool {
	return int64(st.Uid) == int64(uid) && int64(st.Gid) == int64(gid)
}

// chownWalk is one LchownTree's walk beneath its open directory.
type chownWalk struct {
	ids func(uid, gid uint32) (int, int, bool)
}

// entries gives each entry of the open directory d (depth levels beneath
// the tree's top) its ids, and walks each subdirectory in turn.
func (w *chownWalk) entries(d *os.File, depth int) error {
	for {
		names, err := d.Readdirnames(namesPerRead)
		for _, name := range names {
			if err := w.entry(d, name, depth); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// entry gives name, in the open directory d, its ids, and walks it when it
// is a directory.
func (w *chownWalk) entry(d *os.File, name string, depth int) error {
	dfd := int(d.Fd())
	path := func() string { return filepath.Join(d.Name(), name) }
	var st unix.Stat_t
	err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil // removed since it was listed: nothing to give
	}
	if err != nil {
		return &os.PathError{Op: "stat", Path: path(), Err: err}
	}
	if uid, gid, ok := w.ids(st.Uid, st.Gid); ok && !owns(&st, uid, gid) {
		err := unix.Fchownat(dfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "chown", Path: path(), Err: err}
		}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	if depth >= MaxTreeDepth {
		return fmt.Errorf("give %s: deeper than %d directories (beneath.MaxTreeDepth)", path(), MaxTreeDepth)
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		return nil // removed, or swapped for a file or a link, since the stat: not walked
	case err != nil:
		return &os.PathError{Op: "open", Path: path(), Err: err}
	}
	sub := os.NewFile(uintptr(fd), path())
	defer sub.Close()
	return w.entries(sub, depth+1)
}
