package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
)

// fdsBelow lists this process's descriptors that point at or below dir.
func fdsBelow(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		p, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && (p == dir || strings.HasPrefix(p, dir+"/")) {
			out = append(out, p)
		}
	}
	return out
}

// harnessFDsBelow lists the descriptors of process pid (the harness)
// that point at or below dir.
func harnessFDsBelow(t *testing.T, pid int, dir string) []string {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		p, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err == nil && (p == dir || strings.HasPrefix(p, dir+"/")) {
			out = append(out, p)
		}
	}
	return out
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
		if fds := fdsBelow(t, root); len(fds) == 0 || len(fds) > 3 {
			t.Fatalf("episode %d: the process holds %d descriptors below the workspace root, want 1 to 3 (a disk's each): %v", i, len(fds), fds)
		}
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
