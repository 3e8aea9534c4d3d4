package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeAddrFile writes content to path (--addr-file) atomically: a
// temporary file in the same directory, renamed over path, so that a
// reader never sees a partial address. It writes only regular files: an
// existing path that is a device, a FIFO, a socket or a directory, or a
// symlink to one (or to nothing), is refused and left as it is. A symlink
// to a regular file is followed, and its target replaced.
func writeAddrFile(path, content string) error {
	target, err := addrFileTarget(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), ".addr-*")
	if err != nil {
		return fmt.Errorf("create a temporary file beside %s: %w", target, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing is there
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("replace %s: %w", target, err)
	}
	return nil
}

// addrFileTarget returns the file writeAddrFile may replace for path: path
// itself when it does not exist or is a regular file, a symlink's target
// when that is a regular file; anything else is an error.
func addrFileTarget(path string) (string, error) {
	li, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil
	}
	if err != nil {
		return "", err
	}
	if li.Mode().IsRegular() {
		return path, nil
	}
	if li.Mode()&fs.ModeSymlink == 0 {
		return "", fmt.Errorf("%s is %s, not a regular file: refusing to replace it", path, kindOf(li.Mode()))
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("%s is a symlink that does not resolve (%v): refusing to replace it", path, err)
	}
	ti, err := os.Stat(target)
	if err != nil {
		return "", err
	}
	if !ti.Mode().IsRegular() {
		return "", fmt.Errorf("%s is a symlink to %s (%s), not a regular file: refusing to replace it", path, target, kindOf(ti.Mode()))
	}
	return target, nil
}

// kindOf names a file's type for people.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "not a regular file (" + m.Type().String() + ")"
}
