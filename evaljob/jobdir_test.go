package evaljob

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Jobs started in the same second each get a job directory of their own
// (base, base-2, ...): two evals started at once collided on the default
// directory, and the second was refused with advice to resume the first.
func TestJobsStartedTogetherGetDirectoriesOfTheirOwn(t *testing.T) {
	base := filepath.Join(t.TempDir(), "jobs", "2026-12-05__03-06-12")
	const n = 8
	dirs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := claimJobDir(base)
			if err != nil {
				t.Error(err)
			}
			dirs[i] = d
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			t.Fatalf("two jobs got %s: %v", d, dirs)
		}
		seen[d] = true
	}
	if !seen[base] || !seen[base+"-2"] || !seen[base+"-8"] {
		t.Errorf("directories %v, want %s and -2 ... -8", dirs, base)
	}
}

// Flags a job refuses leave no job directory behind: the default one was
// claimed before -n was checked, and -n 0 left an empty jobs/<time>.
func TestRefusedFlagsLeaveNoJobDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, err := (&Flags{Concurrency: 0, Attempts: 1}).Options(nil, Env{}); err == nil {
		t.Fatal("-n 0 was accepted")
	}
	if _, err := os.Stat("jobs"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused job left jobs/ behind: %v", err)
	}
}
