package beneath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrTooLarge is returned by Dir.ReadFile for a file beyond its limit.
var ErrTooLarge = errors.New("file too large")

// Dir is a directory whose content someone else shapes (an episode's HOME,
// which the harness writes and a fork copies, links included), read and
// written by a more powerful program (the daemon). Every path is confined
// to it by os.Root, so no link, on the way or at the end, leads out of it
// (one that stays beneath it is followed: it reaches nothing the shaper
// could not write anyway); the file read or written must be a regular file
// (a FIFO, a socket or a device is refused, and is opened without
// blocking); reads are bounded. The zero modes are 0600 for files and 0700
// for directories.
type Dir struct {
	// Path is the directory.
	Path string
	// FileMode is the mode of files created (0 = 0600).
	FileMode fs.FileMode
	// DirMode is the mode of directories created (0 = 0700).
	DirMode fs.FileMode
}

// rel makes name (absolute beneath d.Path, or relative to it) relative to
// d.Path; a name outside it is an error.
func (d Dir) rel(name string) (string, error) {
	r := name
	if filepath.IsAbs(name) {
		var err error
		if r, err = filepath.Rel(d.Path, name); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
	}
	if !filepath.IsLocal(r) {
		return "", fmt.Errorf("%s: not a path beneath %s", name, d.Path)
	}
	return r, nil
}

// open opens d as a root and makes name relative to it; the caller closes
// the root.
func (d Dir) open(name string) (*os.Root, string, error) {
	r, err := d.rel(name)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(d.Path)
	if err != nil {
		return nil, "", err
	}
	return root, r, nil
}

func (d Dir) fileMode() fs.FileMode {
	if d.FileMode == 0 {
		return 0o600
	}
	return d.FileMode
}

func (d Dir) dirMode() fs.FileMode {
	if d.DirMode == 0 {
		return 0o700
	}
	return d.DirMode
}

// openRegular opens name beneath root with flag, without blocking, and
// refuses anything but a regular file. os.Root refuses a link at its end
// that leads out of root.
func openRegular(root *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := root.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	return f, nil
}

// ReadFile reads name beneath d, at most limit bytes: a longer file is
// ErrTooLarge. A missing file's error wraps fs.ErrNotExist.
func (d Dir) ReadFile(name string, limit int64) ([]byte, error) {
	root, r, err := d.open(name)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := openRegular(root, r, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", r, err)
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("read %s: %w (over %d bytes)", r, ErrTooLarge, limit)
	}
	return b, nil
}

// Exists says whether name beneath d is there (a link counts, unfollowed).
func (d Dir) Exists(name string) bool {
	root, r, err := d.open(name)
	if err != nil {
		return false
	}
	defer root.Close()
	_, err = root.Lstat(r)
	return err == nil
}

// WriteFile writes data to name beneath d, making its directories; a link
// out of d, or anything but a regular file, at name is an error, and the
// file is truncated only once it is known to be a regular one.
func (d Dir) WriteFile(name string, data []byte) error {
	root, r, err := d.open(name)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(filepath.Dir(r), d.dirMode()); err != nil {
		return fmt.Errorf("write %s: %w", r, err)
	}
	f, err := openRegular(root, r, os.O_WRONLY|os.O_CREATE, d.fileMode())
	if err != nil {
		return fmt.Errorf("write %s: %w", r, err)
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("write %s: %w", r, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", r, err)
	}
	return f.Close()
}

// LinkOrCopy makes dst a hard link of src, both beneath d (a link at src
// is linked as the link it is, never followed), or, where hard links do
// not work, a copy of src, which must then be a regular file. dst must not
// exist.
func (d Dir) LinkOrCopy(src, dst string) error {
	rs, err := d.rel(src)
	if err != nil {
		return err
	}
	root, rd, err := d.open(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(filepath.Dir(rd), d.dirMode()); err != nil {
		return fmt.Errorf("link %s: %w", rd, err)
	}
	if err := root.Link(rs, rd); err == nil {
		return nil
	}
	in, err := openRegular(root, rs, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("copy %s: %w", rs, err)
	}
	defer in.Close()
	out, err := root.OpenFile(rd, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, d.fileMode())
	if err != nil {
		return fmt.Errorf("copy to %s: %w", rd, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		root.Remove(rd)
		return fmt.Errorf("copy %s to %s: %w", rs, rd, err)
	}
	return out.Close()
}

// Remove removes name beneath d (a link is removed, not followed); a
// missing name is not an error.
func (d Dir) Remove(name string) error {
	root, r, err := d.open(name)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Remove(r); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
