package session

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// fillDir makes n empty files in one directory of a fresh temporary
// directory, as a harness can in its workspace between two turns.
func fillDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	flat := filepath.Join(dir, "flat")
	if err := os.Mkdir(flat, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f, err := os.OpenFile(filepath.Join(flat, "f"+strconv.Itoa(i)), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return dir
}

// allocOf is what one workspaceChanges of dir allocates, in bytes.
func allocOf(t *testing.T, dir string, since time.Time) (uint64, bool, int) {
	t.Helper()
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	c := workspaceChanges(dir, since)
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc, c.Partial, c.Walked
}

// TestWorkspaceChangesBoundBoundsTheRead (an outside red team):
// workspace.record_changes bounds its end-of-turn walk at
// maxWorkspaceWalk entries, but fs.WalkDir reads (and sorts) a whole
// directory before the first entry of it is visited, so the bound does not
// bound what the daemon reads and holds: a harness that leaves N empty
// files in one directory makes the daemon allocate O(N) after every turn,
// whatever the bound (a 10 GiB quota image holds ~650k inodes; without
// limits.disk, no bound at all). The control: at the bound itself the walk
// is partial and allocates what it must; five times as many entries past
// it should cost about the same, since they are not read.
func TestWorkspaceChangesBoundBoundsTheRead(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 120,000 files")
	}
	since := time.Now().Add(-time.Hour)
	small := fillDir(t, maxWorkspaceWalk+1)
	big := fillDir(t, 5*(maxWorkspaceWalk+1))

	aSmall, pSmall, wSmall := allocOf(t, small, since)
	aBig, pBig, wBig := allocOf(t, big, since)
	t.Logf("at the bound: %d bytes allocated, walked %d, partial %v", aSmall, wSmall, pSmall)
	t.Logf("5x past it:   %d bytes allocated, walked %d, partial %v", aBig, wBig, pBig)
	// Control: both walks stop at the bound, so the test exercises it.
	if !pSmall || !pBig || wSmall != maxWorkspaceWalk || wBig != maxWorkspaceWalk {
		t.Fatalf("control: both walks should stop at %d (got %d/%v, %d/%v)", maxWorkspaceWalk, wSmall, pSmall, wBig, pBig)
	}
	if aBig > 2*aSmall {
		t.Errorf("a walk bounded at %d entries allocated %d bytes for a directory of %d entries, %.1fx the %d bytes at the bound: the bound does not bound the read (fs.ReadDir reads the whole directory first)",
			maxWorkspaceWalk, aBig, 5*(maxWorkspaceWalk+1), float64(aBig)/float64(aSmall), aSmall)
	}
}
