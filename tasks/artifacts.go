package tasks

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
)

// copyArtifact copies the artifact rel (slash-separated, "." for the whole
// workspace) of the agent's workspace, opened as root, to the same path
// beneath dst, a separate verifier's fresh workspace. The agent's
// workspace is live while a step before the last is graded (a background
// process of the harness may swap its entries at any moment), so nothing
// is looked up by host path: every open is beneath root (a link out of it
// is refused), a file is opened without following a link at its end and
// without blocking (a FIFO swapped in cannot hang the grading), and only
// what fstat says is a regular file is copied. An entry that changed under
// the copy is left out, as a missing artifact is.
func copyArtifact(root *os.Root, rel string, dst *os.Root) error {
	fi, err := root.Lstat(rel)
	if err != nil {
		return nil // not there: not transferred, as in Harbor
	}
	if !fi.IsDir() {
		return copyRootEntry(root, rel, fi, dst)
	}
	return fs.WalkDir(root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != rel {
				return fs.SkipDir // changed under the walk
			}
			return nil
		}
		info, err := root.Lstat(p)
		if err != nil {
			return nil
		}
		return copyRootEntry(root, p, info, dst)
	})
}

// copyRootEntry copies one entry name beneath root, as Lstat saw it (fi),
// to the same path beneath dst: a directory is made, a link copied as a
// link, a regular file's bytes copied from a descriptor that fstat says is
// still one; anything else is skipped.
func copyRootEntry(root *os.Root, name string, fi fs.FileInfo, dst *os.Root) error {
	rel := filepath.FromSlash(name)
	switch {
	case fi.IsDir():
		if rel == "." {
			return nil
		}
		return dst.MkdirAll(rel, fi.Mode().Perm()|0o700)
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := root.Readlink(name)
		if err != nil {
			return nil
		}
		return linkInto(dst, rel, link)
	case !fi.Mode().IsRegular():
		return nil
	}
	in, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil // swapped for a link (ELOOP) or gone
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil // swapped for a FIFO or a device
	}
	return writeInto(dst, rel, in, st.Mode().Perm())
}

// artifactPath is a declared artifact's path relative to the workspace,
// slash-separated and clean ("." for the workspace itself), or an error
// when it leaves it.
func artifactPath(rel string) (string, error) {
	p := path.Clean("/" + filepath.ToSlash(rel))[1:]
	if p == "" {
		return ".", nil
	}
	if !fs.ValidPath(p) {
		return "", errors.New("not a path inside the workspace")
	}
	return p, nil
}
