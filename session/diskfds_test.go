package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/config"
)

// heldFD is one descriptor of a process: its /proc link and the path it
// points at.
type heldFD struct{ link, path string }

// heldBelow lists the descriptors in fdDir (/proc/PID/fd) that point at
// or below dir.
func heldBelow(t *testing.T, fdDir, dir string) []heldFD {
	t.Helper()
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []heldFD
	for _, e := range ents {
		link := filepath.Join(fdDir, e.Name())
		p, err := os.Readlink(link)
		if err == nil && (p == dir || strings.HasPrefix(p, dir+"/")) {
			out = append(out, heldFD{link, p})
		}
	}
	return out
}

// fdsBelow lists this process's descriptors that point at or below dir.
func fdsBelow(t *testing.T, dir string) []heldFD {
	t.Helper()
	return heldBelow(t, "/proc/self/fd", dir)
}

// harnessFDsBelow lists the descriptors of process pid (the harness)
// that point at or below dir.
func harnessFDsBelow(t *testing.T, pid int, dir string) []heldFD {
	t.Helper()
	return heldBelow(t, fmt.Sprintf("/proc/%d/fd", pid), dir)
}

// maxKeptDisks is how many disks a session holds at most between resets:
// its episode's, the spare's prepared ahead and the emptied ones waiting
// (episode.maxIdleDisks, 2).
const maxKeptDisks = 1 + 1 + 2

// checkDiskRootFDs fails unless the directories this process holds open
// below root are 1 to maxKeptDisks disks' roots, each once and each still
// the mounted file system's root at its path (a descriptor kept past its
// disk's unmount would fail that). Regular files are not counted: the
// session's lock and the images a spare's preparation copies while the
// test looks. A descriptor closed while the test looks at it (a disk
// given up at that moment: its root's descriptor is closed before the
// unmount), or whose number another open took meanwhile, is not counted
// either.
func checkDiskRootFDs(t *testing.T, episode int, root string) {
	t.Helper()
	var dirs []string
	seen := map[string]bool{}
	for _, h := range fdsBelow(t, root) {
		fd, p := h.link, h.path
		held, err := os.Stat(fd) // the open file itself
		if err != nil || !held.IsDir() {
			continue
		}
		atPath, pathErr := os.Stat(p)
		parent, parentErr := os.Stat(filepath.Dir(p))
		if again, err := os.Stat(fd); err != nil || !os.SameFile(held, again) {
			continue // closed meanwhile: the looks at p may have come after its unmount
		}
		if now, err := os.Readlink(fd); err != nil || now != p {
			// The number was closed and taken again by another open (a
			// spare's image copy, a disk's root) since heldBelow read it:
			// held is not p's.
			continue
		}
		switch {
		case pathErr != nil:
			t.Fatalf("episode %d: a descriptor held for %s, which is gone: %v", episode, p, pathErr)
		case !os.SameFile(held, atPath):
			t.Fatalf("episode %d: a descriptor held for %s, which no longer holds the file system it was opened on", episode, p)
		case parentErr != nil:
			t.Fatal(parentErr)
		case atPath.Sys().(*syscall.Stat_t).Dev == parent.Sys().(*syscall.Stat_t).Dev:
			t.Fatalf("episode %d: a descriptor held for %s, which is not a disk's root", episode, p)
		case seen[p]:
			t.Fatalf("episode %d: two descriptors held for %s", episode, p)
		}
		seen[p] = true
		dirs = append(dirs, p)
	}
	if len(dirs) == 0 || len(dirs) > maxKeptDisks {
		t.Fatalf("episode %d: the process holds %d disk roots open below the workspace root, want 1 to %d (a disk's each): %v", episode, len(dirs), maxKeptDisks, dirs)
	}
}

// TestDiskQuotaHoldsNoDescriptorPastItsDisks: each turn's end reads the
// episode's disk usage through a descriptor of its quota file system's
// root (kept until the disk is unmounted). Over a dozen episodes taking
// the session's disks in turn, the daemon holds at most one descriptor per
// disk it keeps (the episode's and the emptied ones waiting), never one a
// harness could inherit; once the session closes, none.
func TestDiskQuotaHoldsNoDescriptorPastItsDisks(t *testing.T) {
	needQuota(t)
	cfg := testConfig(t)
	cfg.Isolation = config.IsolationProcess
	diskLimited(cfg, testQuota)
	s := newSession(t, cfg)
	root := cfg.Workspace.Root
	for i := range 12 {
		reset(t, s)
		for range 2 {
			if got := responseText(t, s, "reply ok"); got != "ok" {
				t.Fatalf("episode %d: %q", i, got)
			}
		}
		checkDiskRootFDs(t, i, root)
		// The harness inherits none of them (close on exec).
		if fds := harnessFDsBelow(t, s.State().HarnessPID, root); len(fds) != 0 {
			t.Fatalf("episode %d: the harness holds descriptors below the workspace root: %v", i, fds)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fds := fdsBelow(t, root); len(fds) != 0 {
		t.Fatalf("after Close the process holds %v", fds)
	}
}
