package episode

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Dirs are one episode's private directories.
type Dirs struct {
	Root      string // removed with everything below it
	Workspace string // the harness's working directory
	Home      string // the harness's HOME
	Tmp       string // the harness's TMPDIR
}

// episodeRoot is the directory of the episode numbered seq under parent.
func episodeRoot(parent string, seq int) Dirs {
	root := filepath.Join(parent, fmt.Sprintf("ep-%d", seq))
	return Dirs{
		Root:      root,
		Workspace: filepath.Join(root, "workspace"),
		Home:      filepath.Join(root, "home"),
		Tmp:       filepath.Join(root, "tmp"),
	}
}

// makeDirs creates the private directories in d.Root (which exists, and
// may be the mount point of the episode's quota), copying template (if
// any) into the workspace.
func makeDirs(d Dirs, template string) error {
	if err := makeSkeleton(d); err != nil {
		return err
	}
	return copyTemplate(template, d)
}

// makeSkeleton makes the episode's workspace, HOME and TMPDIR (empty).
func makeSkeleton(d Dirs) error {
	for _, p := range []string{d.Workspace, d.Home, d.Tmp} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return fmt.Errorf("create episode directory: %w", err)
		}
	}
	return nil
}

// copyTemplate copies workspace.template (none: "") into the workspace.
func copyTemplate(template string, d Dirs) error {
	if template != "" {
		if err := copyTree(template, d.Workspace); err != nil {
			return fmt.Errorf("copy workspace template %s: %w", template, err)
		}
	}
	return nil
}

// copyTree copies regular files, directories and symlinks from src into dst.
// Other file types (devices, sockets, FIFOs) are skipped.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			return copyFile(path, target, info.Mode().Perm())
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
