// Package beneath writes and chowns files beneath a directory that someone
// else shapes (an episode's workspace, which the harness may fill with links):
// the path stays beneath the directory, and no link is followed, neither a
// directory on the way nor the file itself. It owns only that; it must not
// know about episodes, sandboxes or events.
package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// WriteFile writes content to rel beneath dir, making the directories on
// the way (0755), and returns the paths it made and wrote, relative to dir,
// in order (the directories, then the file). rel must be relative without
// "..". A link on the way or at rel, or a non-regular file at rel, is an
// error. os.Root confines every step to dir even against a link swapped in
// meanwhile.
func WriteFile(dir, rel, content string) ([]string, error) {
	clean := filepath.Clean(rel)
	if filepath.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("place %q: not a path beneath the directory", rel)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("place %q: %w", rel, err)
	}
	defer root.Close()
	var made []string
	sub := ""
	for _, part := range strings.Split(filepath.Dir(clean), string(filepath.Separator)) {
		if part == "." || part == "" {
			continue
		}
		sub = filepath.Join(sub, part)
		fi, err := root.Lstat(sub)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(sub, 0o755); err != nil {
				return made, fmt.Errorf("place %q: make %s: %w", rel, sub, err)
			}
			made = append(made, sub)
		case err != nil:
			return made, fmt.Errorf("place %q: %w", rel, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return made, fmt.Errorf("place %q: %s is a symbolic link, which is not followed", rel, sub)
		case !fi.IsDir():
			return made, fmt.Errorf("place %q: %s is not a directory", rel, sub)
		}
	}
	f, err := root.OpenFile(clean, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return made, fmt.Errorf("place %q: %w", rel, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return made, fmt.Errorf("place %q: not a regular file", rel)
	}
	if err := f.Truncate(0); err != nil {
		return made, fmt.Errorf("place %q: %w", rel, err)
	}
	if _, err := f.WriteString(content); err != nil {
		return made, fmt.Errorf("place %q: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return made, fmt.Errorf("place %q: %w", rel, err)
	}
	return append(made, clean), nil
}

// Lchown gives each of rels, paths beneath dir, to uid:gid, each entry
// alone (nothing is walked), resolving every path beneath dir (os.Root: no
// link out of it is followed, the last component's never): dir may be a
// live harness's workspace, where a directory on the way can become a link
// to a host directory at any time.
func Lchown(dir string, uid, gid int, rels ...string) error {
	if len(rels) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, rel := range rels {
		if err := root.Lchown(rel, uid, gid); err != nil {
			return fmt.Errorf("give %s to uid %d: %w", rel, uid, err)
		}
	}
	return nil
}
