// Package treecopy copies a directory tree as exactly as the host allows:
// directories, regular files (each cloned with FICLONE where the file
// system has reflinks, else its data extents copied: holes stay holes),
// symlinks and hard links, with their permission bits, timestamps and,
// when asked, owners. The source may be written by someone untrusted
// meanwhile: it is read through os.Root, so a link swapped in cannot lead
// the copy outside it. It owns only the copy; it must not know about
// episodes, sandboxes or quotas (internal/quota's CloneFile clones each
// file).
package treecopy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/quota"
)

// Bytes sums the allocated blocks of everything below dir, a file with
// several hard links once (as du does).
func Bytes(dir string) (int64, error) {
	var n int64
	seen := map[[2]uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if st.Nlink > 1 && !de.IsDir() {
			id := [2]uint64{st.Dev, st.Ino}
			if seen[id] {
				return nil
			}
			seen[id] = true
		}
		n += st.Blocks * 512
		return nil
	})
	return n, err
}

// Copy copies the tree src into dst (created; it may exist as an empty
// directory): directories, regular files (cloned where the host allows,
// else their data extents copied), symlinks and hard links, with their
// permission bits (set-uid and set-gid dropped, the sticky bit kept) and
// timestamps, and with owners when owners is set (else the caller owns
// the copy). Sockets, FIFOs and devices are skipped. src is read through
// os.Root: a link swapped in by someone writing src meanwhile cannot lead
// the copy outside it; a file that vanishes meanwhile is skipped. A
// cancelled ctx ends the copy (dst is left partial). dst is the caller's
// private directory (nobody else writes it), written by path.
func Copy(ctx context.Context, src, dst string, owners bool) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	c := &treeCopy{ctx: ctx, root: root, dst: dst, owners: owners, links: map[[2]uint64]string{}}
	if err := fs.WalkDir(root.FS(), ".", c.visit); err != nil {
		return err
	}
	// Directories last, deepest first: writing into one changes its
	// modification time, and a read-only one could not be written.
	for i := len(c.dirs) - 1; i >= 0; i-- {
		if err := c.finish(c.dirs[i].path, &c.dirs[i].st, false); err != nil {
			return err
		}
	}
	return nil
}

// treeCopy is one Copy.
type treeCopy struct {
	ctx    context.Context
	root   *os.Root
	dst    string
	owners bool
	links  map[[2]uint64]string // (dev, ino) of a hard-linked source -> its copy
	dirs   []dirCopy
}

type dirCopy struct {
	path string
	st   unix.Stat_t
}

func (c *treeCopy) visit(rel string, de fs.DirEntry, err error) error {
	if cerr := c.ctx.Err(); cerr != nil {
		return cerr
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && rel != "." {
			return nil
		}
		return err
	}
	target := filepath.Join(c.dst, rel)
	switch {
	case de.IsDir():
		fi, err := c.root.Lstat(rel)
		if errors.Is(err, fs.ErrNotExist) {
			return fs.SkipDir
		}
		if err != nil {
			return err
		}
		st := statOf(fi)
		if err := os.Mkdir(target, 0o700); err != nil && !(rel == "." && errors.Is(err, fs.ErrExist)) {
			return err
		}
		c.dirs = append(c.dirs, dirCopy{path: target, st: st})
		return nil
	case de.Type()&fs.ModeSymlink != 0:
		link, err := c.root.Readlink(rel)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		fi, err := c.root.Lstat(rel)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := os.Symlink(link, target); err != nil {
			return err
		}
		st := statOf(fi)
		return c.finish(target, &st, true)
	case de.Type().IsRegular():
		return c.copyFile(rel, target)
	}
	return nil // a socket, FIFO or device
}

// copyFile copies the regular file rel of the source to target.
func (c *treeCopy) copyFile(rel, target string) error {
	// O_NONBLOCK: a FIFO swapped in meanwhile must not block the copy
	// (it is then skipped as not regular).
	in, err := c.root.OpenFile(rel, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ELOOP) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(in.Fd()), &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	key := [2]uint64{st.Dev, st.Ino}
	if st.Nlink > 1 {
		if first, ok := c.links[key]; ok {
			return os.Link(first, target)
		}
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := quota.CloneFile(c.ctx, in, out); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if st.Nlink > 1 {
		c.links[key] = target
	}
	return c.finish(target, &st, false)
}

// finish gives target the source's owner (when kept), permission bits
// and timestamps.
func (c *treeCopy) finish(target string, st *unix.Stat_t, symlink bool) error {
	if c.owners {
		if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if !symlink {
		// After chown, which clears set-id bits; those are dropped anyway.
		if err := unix.Chmod(target, st.Mode&0o1777); err != nil {
			return fmt.Errorf("chmod %s: %w", target, err)
		}
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set the times of %s: %w", target, err)
	}
	return nil
}

// statOf is fi's stat (os.Root's Lstat reports a *syscall.Stat_t).
func statOf(fi fs.FileInfo) unix.Stat_t {
	var st unix.Stat_t
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Dev, st.Ino, st.Nlink = s.Dev, s.Ino, s.Nlink
		st.Mode, st.Uid, st.Gid = s.Mode, s.Uid, s.Gid
		st.Atim = unix.Timespec{Sec: s.Atim.Sec, Nsec: s.Atim.Nsec}
		st.Mtim = unix.Timespec{Sec: s.Mtim.Sec, Nsec: s.Mtim.Nsec}
	}
	return st
}
