package episode

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
)

// sandboxEnv is testEnv in sandbox isolation, this test binary as the
// sandboxes' init (TestMain); it skips (fails under CI=true) where no
// sandbox runs.
func sandboxEnv(t *testing.T, disk int64) *Env {
	t.Helper()
	if os.Geteuid() != 0 {
		testbin.Missing(t, "the sandbox's per-episode uids need root")
	}
	if r := sandbox.Probe(context.Background(), ""); !r.OK {
		testbin.Missing(t, "no sandbox here: %s", r.Detail)
	}
	e := testEnv(t, filepath.Join(t.TempDir(), "session"), disk)
	e.Isolation = config.IsolationSandbox
	return e
}

// runIn runs a shell script as the episode's harness in its sandbox and
// fails the test unless it exits 0.
func runIn(t *testing.T, ep *Episode, script string) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	r, err := ep.sandbox.Run(context.Background(), sandbox.Command{Path: "/bin/sh", Args: []string{"-c", script}, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + ep.sandbox.Inside(ep.Dirs().Home)}, Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	x, err := r.Wait(context.Background())
	if err != nil || x.Status.Code != 0 {
		b, _ := os.ReadFile(out.Name())
		t.Fatalf("%q in the sandbox: %+v, %v: %s", script, x, err, b)
	}
}

// owners counts the owners (host uid) of everything in the workspace and
// HOME.
func owners(t *testing.T, ep *Episode) map[uint32]int {
	t.Helper()
	got := map[uint32]int{}
	for _, d := range []string{ep.Dirs().Workspace, ep.Dirs().Home} {
		filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				t.Error(err)
				return nil
			}
			fi, _ := de.Info()
			got[fi.Sys().(*syscall.Stat_t).Uid]++
			return nil
		})
	}
	return got
}

// A sandboxed parent's files belong to its harness's host uid; a sibling
// opened from its snapshot gets them as the daemon's (as a fresh episode's
// template copy), its own sandbox hands them to its own harness uid, which
// reads and writes them; the parent's uid owns nothing of the sibling's.
func TestSnapshotOfASandboxedEpisodeIsTheSiblingsOwn(t *testing.T) {
	for _, c := range []struct {
		name string
		disk int64
	}{{"quota-image", 64 << 20}, {"tree", 0}} {
		t.Run(c.name, func(t *testing.T) {
			if c.disk > 0 {
				needQuota(t)
			}
			e := sandboxEnv(t, c.disk)
			open := func(from *Snapshot) *Episode {
				ep, err := Open(context.Background(), Spec{Env: e, ID: "sb", From: from}, LevelSandbox)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ep.Close(context.Background()) })
				return ep
			}
			parent := open(nil)
			runIn(t, parent, `echo parent > notes && mkdir -p src && echo code > src/main && echo state > "$HOME/session"`)
			puid, _ := parent.sandbox.HostIDs()
			if o := owners(t, parent); o[uint32(puid)] == 0 {
				t.Fatalf("the parent's files are not its harness's (uid %d): %v", puid, o)
			}
			snap, err := parent.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer snap.Close()
			sib := open(snap)
			suid, _ := sib.sandbox.HostIDs()
			if suid == puid {
				t.Fatalf("parent and sibling share the host uid %d", suid)
			}
			// The sandbox's start hands the directories to its harness uid,
			// as it does a fresh episode's.
			if o := owners(t, sib); len(o) != 1 || o[uint32(suid)] == 0 {
				t.Errorf("the sibling's files are owned by %v, want its harness uid %d only", o, suid)
			}
			runIn(t, sib, `[ "$(cat notes)" = parent ] && [ "$(cat "$HOME/session")" = state ] && echo sibling >> notes && echo new > src/new && rm src/main`)
			o := owners(t, sib)
			if o[uint32(puid)] != 0 || o[uint32(suid)] == 0 {
				t.Errorf("the sibling's files are owned by %v (parent's uid %d, sibling's %d)", o, puid, suid)
			}
			if got := readOr(filepath.Join(parent.Dirs().Workspace, "src/main")); got != "code\n" {
				t.Errorf("the sibling's rm reached the parent: %q", got)
			}
			if got := readOr(filepath.Join(sib.Dirs().Workspace, "notes")); got != "parent\nsibling\n" {
				t.Errorf("sibling's notes %q", got)
			}
		})
	}
}
