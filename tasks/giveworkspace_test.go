package tasks

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
)

// TestGiveWorkspaceDoesNotChownThroughASwappedDirectory: as root, the
// daemon hands the workspace to each grading (and setup, oracle) sandbox
// and back to the harness afterwards by walking it and chowning every
// entry (giveWorkspace, its restore). Between the steps of a multi-step
// task the harness is alive while that walk runs; the walk listed a
// directory, then chowned each entry by its path from the host's root,
// following a directory the harness had meanwhile replaced by a symbolic
// link: host files (here a directory outside the workspace, owned by
// root, standing for /etc) became the sandbox's, then the harness's. Now
// every entry is chowned beneath the workspace (os.Root), where a link
// out of it is never followed. The control: the same walk without a
// swapper gives every workspace file to the sandbox and back.
func TestGiveWorkspaceDoesNotChownThroughASwappedDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "the workspace is walked and chowned only as root")
	}
	const files = 200
	ws, host := testbin.SwapTargets(t, files)
	// The workspace is the harness's (its sandbox's root, a range id),
	// the grading sandbox another range's.
	harness, grader := sandbox.DefaultIDBase+3*sandbox.RangeSize, sandbox.DefaultIDBase+5*sandbox.RangeSize
	if err := chownTree(ws, harness, harness); err != nil {
		t.Fatal(err)
	}
	for _, task := range []*Task{
		{ID: "plain", WorkDir: DefaultWorkDir},
		{ID: "users", WorkDir: DefaultWorkDir, VerifierUser: &User{Name: "tester", UID: 1001}},
	} {
		// Control: without a swapper, the workspace goes to the grader
		// and back.
		restore, err := task.giveWorkspace(ws, runSpec{}, grader, grader, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := testbin.Owner(t, filepath.Join(ws, "d", "f7")); got != uint32(grader) {
			t.Fatalf("%s: control: a workspace file is uid %d during grading, want the grader's %d", task.ID, got, grader)
		}
		restore()
		if got := testbin.Owner(t, filepath.Join(ws, "d", "f7")); got != uint32(harness) {
			t.Fatalf("%s: control: a workspace file is uid %d after grading, want the harness's %d", task.ID, got, harness)
		}

		stop := testbin.SwapDirWithLink(ws, host)
		deadline := time.Now().Add(3 * time.Second)
		rounds := 0
		for ; time.Now().Before(deadline); rounds++ {
			restore, _ := task.giveWorkspace(ws, runSpec{}, grader, grader, 0)
			restore()
		}
		stop()
		for i := range files {
			p := filepath.Join(host, "f"+strconv.Itoa(i))
			if got := testbin.Owner(t, p); got != 0 {
				t.Fatalf("%s: after %d gradings a host file outside the workspace, %s, is owned by uid %d (the harness is uid %d, the grader %d): chowned through a directory swapped for a link",
					task.ID, rounds, p, got, harness, grader)
			}
		}
		t.Logf("%s: %d gradings against the swapper, no host file chowned", task.ID, rounds)
	}
}
