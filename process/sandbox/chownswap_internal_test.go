package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
)

// TestChownTreeDoesNotFollowASwappedDirectory: Run gives the workspace and
// HOME to the harness's host uid (chownTree) each time it starts a
// harness, every turn for a one-shot agent. Processes with the harness's
// ids may be alive then (a tool server's side sandbox has them and the
// workspace, and goes on between turns), and one that replaces a
// directory of the workspace by a link to a host directory between the
// walk's listing and its chown made the daemon, as root, chown the host
// directory's files. Each entry is now chowned beneath the directory
// (os.Root). The control: without the swapper every file is given.
func TestChownTreeDoesNotFollowASwappedDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "chowning to another uid needs root")
	}
	const files = 200
	ws, host := testbin.SwapTargets(t, files)
	harness := DefaultIDBase + 3*RangeSize
	if err := chownTree(ws, harness, harness); err != nil {
		t.Fatal(err)
	}
	if got := testbin.Owner(t, filepath.Join(ws, "d", "f7")); got != uint32(harness) {
		t.Fatalf("control: a workspace file is uid %d, want the harness's %d", got, harness)
	}

	stop := testbin.SwapDirWithLink(ws, host) // a live process of the harness's ids
	deadline := time.Now().Add(2 * time.Second)
	rounds := 0
	for ; time.Now().Before(deadline); rounds++ {
		_ = chownTree(ws, harness+rounds%2, harness+rounds%2) // an entry may vanish meanwhile
	}
	stop()
	for i := range files {
		p := filepath.Join(host, "f"+strconv.Itoa(i))
		if got := testbin.Owner(t, p); got != 0 {
			t.Fatalf("after %d walks a host file outside the workspace, %s, is owned by uid %d: chowned through a directory swapped for a link", rounds, p, got)
		}
	}
	t.Logf("%d walks against the swapper, no host file chowned", rounds)
}
