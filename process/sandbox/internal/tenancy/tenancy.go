// Package tenancy puts what a sandbox's init owns inside back to new for a
// later tenant (the next episode of a session): it empties the sandbox's
// own scratch file systems back to their usage at setup, checks that the
// PID namespace holds nothing but the init, and resets its pid counter.
// It runs in the init only; it knows nothing of the control channel, the
// doors or the files below the binds (the daemon's to empty).
package tenancy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxEntries bounds how many files a tenant may leave in the
// sandbox's own /tmp and /dev/shm for a recycle to remove them one by one:
// above it, a new sandbox costs less.
const maxEntries = 4096

// Scratch is one of the sandbox's own writable file systems (/tmp,
// /dev/shm) as it was set up: the entries the init made there (mount
// points of binds) and its usage then.
type Scratch struct {
	dir   string
	setup map[string]bool
	fresh unix.Statfs_t
}

// ScratchDirs are the sandbox's own writable file systems.
var ScratchDirs = []string{"/tmp", "/dev/shm"}

// Record notes each of ScratchDirs as it is once the root is built, for
// Empty to restore.
func Record() ([]Scratch, error) {
	var out []Scratch
	for _, d := range ScratchDirs {
		s := Scratch{dir: d, setup: map[string]bool{}}
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("note %s: %w", d, err)
		}
		for _, e := range ents {
			s.setup[e.Name()] = true
		}
		if err := unix.Statfs(d, &s.fresh); err != nil {
			return nil, fmt.Errorf("note %s: %w", d, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// Empty removes every entry a tenant made and checks the file system is
// back to its usage at setup (no file left, none still held open). The
// init's own entries are root's (0755, made before any tenant ran): a
// tenant cannot write below them.
func (s Scratch) Empty() error {
	var now unix.Statfs_t
	if err := unix.Statfs(s.dir, &now); err != nil {
		return err
	}
	if used := (now.Files - now.Ffree) - (s.fresh.Files - s.fresh.Ffree); used > maxEntries {
		return fmt.Errorf("%s holds %d files: more than %d are cheaper to drop with the sandbox", s.dir, used, maxEntries)
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if s.setup[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.dir, e.Name())); err != nil {
			return err
		}
	}
	if err := unix.Statfs(s.dir, &now); err != nil {
		return err
	}
	if now.Files-now.Ffree != s.fresh.Files-s.fresh.Ffree || now.Bfree != s.fresh.Bfree {
		return fmt.Errorf("%s is not back to fresh: %d inodes and %d free blocks, %d and %d at setup",
			s.dir, now.Files-now.Ffree, now.Bfree, s.fresh.Files-s.fresh.Ffree, s.fresh.Bfree)
	}
	return nil
}

// OnlyInitLeft checks that the PID namespace holds no process but the
// init (the caller has killed and reaped the rest).
func OnlyInitLeft() error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != 1 {
			return fmt.Errorf("process %d outlived the kill of the namespace", pid)
		}
	}
	return nil
}

// ResetPidCounter makes the namespace hand out pids from the lowest free
// one again, as a new namespace does: how many pids a tenant used is not
// readable by the next.
func ResetPidCounter() error {
	err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte("1"), 0)
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("reset the namespace's pid counter: %w (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE over the sandbox)", err)
	}
	return err
}
