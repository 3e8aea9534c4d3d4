package episode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/internal/sessiondir"
)

func TestSweepWorkspacesKeepsLiveAndUnknown(t *testing.T) {
	root := t.TempDir()
	liveLock, err := sessiondir.Lock(filepath.Join(root, "live"))
	if err != nil {
		t.Fatal(err)
	}
	defer liveLock.Close()
	goneLock, err := sessiondir.Lock(filepath.Join(root, "gone"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "gone", "ep-1", "workspace"), 0o700)
	goneLock.Close() // its daemon died: the kernel dropped the lock
	os.MkdirAll(filepath.Join(root, "unknown"), 0o700)

	removed, err := SweepWorkspaces(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || filepath.Base(removed[0]) != "gone" {
		t.Fatalf("removed %v, want only gone", removed)
	}
	for _, keep := range []string{"live", "unknown"} {
		if _, err := os.Stat(filepath.Join(root, keep)); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "gone")); !os.IsNotExist(err) {
		t.Errorf("gone is still there: %v", err)
	}
	if r, err := SweepWorkspaces(filepath.Join(root, "absent"), nil); err != nil || r != nil {
		t.Errorf("an absent root: %v %v", r, err)
	}
}
