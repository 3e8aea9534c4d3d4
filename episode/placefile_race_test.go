package episode

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/testbin"
)

// TestPlaceFileDoesNotChownThroughASwappedDirectory: an event's file
// effect (PlaceFile) writes beneath the workspace without following links,
// then gave what it made to the harness with the sandbox's Chown, a walk
// from the made path's host path: the harness, live during the turn whose
// tool call fires the event, swapped a directory on that path for a link
// between the write and the chown, and the daemon (root) chowned the
// directory the link named, outside the workspace, and everything in it
// to the harness's uid. Now what was made is chowned beneath the
// workspace (os.Root), each entry alone. The control: a file placed
// without a swapper, in a new directory, is the harness's.
func TestPlaceFileDoesNotChownThroughASwappedDirectory(t *testing.T) {
	e := sandboxEnv(t, 0)
	ep, err := Open(context.Background(), Spec{Env: e, ID: "place"}, LevelSandbox)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close(context.Background()) })
	huid, _ := ep.sandbox.HostIDs()
	ws := ep.Dirs().Workspace
	runIn(t, ep, `mkdir a`)

	// Control: what PlaceFile makes becomes the harness's.
	if err := ep.PlaceFile("a/ctl/f", "x"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a/ctl", "a/ctl/f"} {
		if got := testbin.Owner(t, filepath.Join(ws, p)); got != uint32(huid) {
			t.Fatalf("control: %s is uid %d, want the harness's %d", p, got, huid)
		}
	}

	const dirs = 3000
	host := filepath.Join(t.TempDir(), "host")
	for i := range dirs {
		if err := os.MkdirAll(filepath.Join(host, "b"+strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the harness's background process: a is a directory, then a link to host, atomically
		defer wg.Done()
		a, l := filepath.Join(ws, "a"), filepath.Join(ws, ".l")
		if err := os.Symlink(host, l); err != nil {
			t.Error(err)
			return
		}
		for !done.Load() {
			_ = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, l, unix.RENAME_EXCHANGE)
			for t0 := time.Now(); time.Since(t0) < 5*time.Microsecond; {
			}
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	i, errs := 0, 0
	for ; i < dirs && time.Now().Before(deadline); i++ {
		if err := ep.PlaceFile("a/b"+strconv.Itoa(i)+"/f", "x"); err != nil {
			errs++
		}
	}
	done.Store(true)
	wg.Wait()
	chowned := 0
	for j := range dirs {
		if testbin.Owner(t, filepath.Join(host, "b"+strconv.Itoa(j))) != 0 {
			chowned++
		}
	}
	if chowned > 0 {
		t.Fatalf("after %d placed files (%d refused), %d host directories outside the workspace are owned by the harness's uid %d: chowned through a directory swapped for a link", i, errs, chowned, huid)
	}
	t.Logf("%d files placed against the swapper, no host directory chowned", i)
}
