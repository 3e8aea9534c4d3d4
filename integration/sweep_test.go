package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestSweepLeftoverWorkspaces: a daemon killed with SIGKILL leaves its
// session directories; the next daemon to start over the same workspace root
// removes them and says so, and never touches those of a daemon still alive.
func TestSweepLeftoverWorkspaces(t *testing.T) {
	t.Parallel()
	shared := t.TempDir()
	root := filepath.Join(shared, "harnessd") // the default workspace root under TMPDIR
	env := []string{"TMPDIR=" + shared}
	sessionDirs := func() []string {
		entries, _ := os.ReadDir(root)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	reset := func(d *daemon) {
		if code, body := d.DoRaw("POST", "/reset", "{}", nil); code != http.StatusOK {
			t.Fatalf("reset: HTTP %d %s", code, body)
		}
	}

	killed := startDaemon(t, spec{Harness: agentCmd(t), Env: env})
	reset(killed)
	left := sessionDirs()
	if len(left) != 1 {
		t.Fatalf("session directories after the first reset: %v", left)
	}
	live := startDaemon(t, spec{Harness: agentCmd(t), Env: env})
	reset(live)
	var liveDir string
	for _, d := range sessionDirs() {
		if d != left[0] {
			liveDir = d
		}
	}
	if liveDir == "" {
		t.Fatalf("the live daemon made no session directory: %v", sessionDirs())
	}

	killed.Signal(syscall.SIGKILL)
	killed.Wait()
	if !slices.Contains(sessionDirs(), left[0]) {
		t.Fatalf("the killed daemon's session directory is already gone: %v", sessionDirs())
	}

	next := startDaemon(t, spec{Harness: agentCmd(t), Env: env})
	next.WaitLog("removed a session directory left by a daemon that is gone", left[0])
	got := sessionDirs()
	if slices.Contains(got, left[0]) {
		t.Errorf("the leftover %s was not removed: %v", left[0], got)
	}
	if !slices.Contains(got, liveDir) {
		t.Errorf("the live daemon's session directory %s was removed: %v", liveDir, got)
	}
	reset(live) // the live daemon's session still works
}
