package tasks

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Prepare fills workspace (an existing, empty directory standing for the
// task's WorkDir) with the task's environment files: each COPY/ADD of the
// Dockerfile whose destination lies in WorkDir, in order (a later copy
// overwrites an earlier one), then a JSONL task's directory and inline
// files. tests/ and solution/ are never copied.
func (t *Task) Prepare(workspace string) error {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return fmt.Errorf("task %s: prepare workspace: %w", t.ID, err)
	}
	defer root.Close()
	for _, c := range t.copies {
		dst := c.dst
		if c.intoDir {
			dst = path.Join(dst, filepath.Base(c.src))
		}
		if !within(dst, t.WorkDir) {
			continue // reported at load time
		}
		rel := filepath.FromSlash(path.Clean("/" + strings.TrimPrefix(dst, t.WorkDir))[1:])
		if rel == "" {
			rel = "."
		}
		if c.context != "" {
			// Again at each copy: the task directory may have changed
			// since it was loaded.
			if err := beneathDir(c.context, c.src); err != nil {
				return fmt.Errorf("task %s: prepare workspace: %w", t.ID, err)
			}
		}
		var err error
		if c.isDir {
			err = copyDirInto(c.src, root, rel)
		} else {
			err = copyOneInto(c.src, root, rel)
		}
		if err != nil {
			return fmt.Errorf("task %s: prepare workspace: %w", t.ID, err)
		}
	}
	for p, content := range t.files {
		rel := filepath.FromSlash(path.Clean("/" + p)[1:])
		if dir := filepath.Dir(rel); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("task %s: prepare workspace: %w", t.ID, err)
			}
		}
		if old, err := root.Lstat(rel); err == nil && !old.Mode().IsRegular() {
			if err := root.RemoveAll(rel); err != nil {
				return fmt.Errorf("task %s: prepare workspace: %w", t.ID, err)
			}
		}
		if err := root.WriteFile(rel, []byte(content), 0o644); err != nil {
			return fmt.Errorf("task %s: prepare workspace: %w", t.ID, err)
		}
	}
	return nil
}

// copyDirInto copies the contents of src into rel beneath root (created as
// needed), replacing files already there. Every path is resolved beneath
// root (os.Root): a link already in the workspace (the agent's, between
// the steps of a task; an earlier copy's) is never followed out of it.
func copyDirInto(src string, root *os.Root, rel string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		return copyOneInto(p, root, filepath.Join(rel, r))
	})
}

// copyOneInto copies one directory (without its contents), regular file
// or symbolic link from src to rel beneath root, replacing what is there;
// other kinds (devices, sockets, FIFOs) are skipped.
func copyOneInto(src string, root *os.Root, rel string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		if rel == "." {
			return nil
		}
		return root.MkdirAll(rel, fi.Mode().Perm()|0o700)
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return linkInto(root, rel, link)
	case fi.Mode().IsRegular():
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		return writeInto(root, rel, in, fi.Mode().Perm())
	}
	return nil
}

// writeInto writes what in holds to rel beneath root with mode perm
// (making its directories), replacing what is there: an entry that is not
// a regular file is removed first, and the file is opened without
// following a link at its end and without blocking.
func writeInto(root *os.Root, rel string, in io.Reader, perm fs.FileMode) error {
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if old, err := root.Lstat(rel); err == nil && !old.Mode().IsRegular() {
		root.RemoveAll(rel)
	}
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(perm); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// linkInto makes rel beneath root a symbolic link to target (making its
// directories), replacing what is there.
func linkInto(root *os.Root, rel, target string) error {
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	root.Remove(rel)
	return root.Symlink(target, rel)
}
