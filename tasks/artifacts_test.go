package tasks

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// swapper keeps replacing ws/out/f, atomically (rename), by a regular file
// and by a hard link of other (a symbolic link or a FIFO made once), as a
// background process of a live harness can while a step of a multi-step
// task is graded (the harness stays alive between steps, docs/tasks.md).
func swapper(t *testing.T, ws, other string) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f := filepath.Join(ws, "out", "f")
		tmpL, tmpR := filepath.Join(ws, ".l"), filepath.Join(ws, ".r")
		for !done.Load() {
			if err := os.Link(other, tmpL); err == nil {
				_ = os.Rename(tmpL, f)
			}
			if err := os.WriteFile(tmpR, []byte("agent data\n"), 0o644); err == nil {
				_ = os.Rename(tmpR, f)
			}
		}
	}()
	return func() { done.Store(true); wg.Wait() }
}

func artifactWorkspace(t *testing.T) (dir, ws string, task *Task) {
	t.Helper()
	dir = t.TempDir()
	ws = filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "out", "f"), []byte("agent data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, ws, &Task{ID: "t", WorkDir: DefaultWorkDir, Separate: true, Artifacts: []string{"/app/out"}}
}

// TestTransferArtifactsDoesNotFollowASwappedLink (red team 6): a separate
// verifier's artifacts are copied by the daemon, on the host, from the
// agent's workspace (transferArtifacts). The copy used to check an entry
// with Lstat, then os.Open it by path, following a symbolic link: an entry
// the agent swapped from a regular file to a link between the two was read
// through the link, as the daemon, from anywhere on the host; now it is
// opened beneath the workspace without following a link (copyArtifact). Between the steps of a multi-step task the harness is alive
// (session.gradeTaskStep grades steps before the last without stopping
// it), so its background process can keep swapping. Here a file outside
// the workspace (standing for a host file the harness cannot read) ends up
// in the verifier's workspace. The control: a link that stays a link is
// copied as a link, never followed.
func TestTransferArtifactsDoesNotFollowASwappedLink(t *testing.T) {
	dir, ws, task := artifactWorkspace(t)
	secret := filepath.Join(dir, "host-secret")
	if err := os.WriteFile(secret, []byte("HOST-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(ws, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}

	// Control: a link left in place is copied as a link.
	ctl := filepath.Join(ws, "out", "ctl")
	if err := os.Symlink(secret, ctl); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "control")
	if err := task.transferArtifacts(ws, dst, nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "out", "ctl")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("control: the link was not copied as a link: %v %v", fi, err)
	}
	os.Remove(ctl)

	stop := swapper(t, ws, link)
	defer stop()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		dst := filepath.Join(dir, "v"+strconv.Itoa(i))
		_ = task.transferArtifacts(ws, dst, nil)
		b, err := os.ReadFile(filepath.Join(dst, "out", "f"))
		if fi, lerr := os.Lstat(filepath.Join(dst, "out", "f")); lerr == nil && fi.Mode().IsRegular() && err == nil && strings.Contains(string(b), "HOST-SECRET") {
			t.Fatalf("after %d gradings the daemon copied a file from outside the workspace into the verifier's workspace (through a link swapped in after its Lstat): %q", i+1, b)
		}
		os.RemoveAll(dst)
	}
}

// TestTransferArtifactsCannotBeWedgedByAFIFO (red team 6): the same race
// with a FIFO: the copy skipped FIFOs by its Lstat, but an entry swapped
// to a FIFO after it was opened with a blocking open(2), which waits for a
// writer that never comes: the step's grading, and with it the session's
// step, hung (nothing cancels the open); now the open does not block. The control: a FIFO in place is
// skipped at once.
func TestTransferArtifactsCannotBeWedgedByAFIFO(t *testing.T) {
	dir, ws, task := artifactWorkspace(t)
	fifo := filepath.Join(ws, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Control: a FIFO that stays one is skipped.
	ctl := filepath.Join(ws, "out", "ctl")
	if err := os.Link(fifo, ctl); err != nil {
		t.Fatal(err)
	}
	ctlDone := make(chan error, 1)
	go func() { ctlDone <- task.transferArtifacts(ws, filepath.Join(dir, "control"), nil) }()
	select {
	case err := <-ctlDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("control: a FIFO in place hung the transfer")
	}
	os.Remove(ctl)

	// release opens the FIFO for writing and closes it, so that a reader
	// stuck in open(2) gets EOF.
	release := func() {
		if fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			syscall.Close(fd)
		}
	}
	stop := swapper(t, ws, fifo)
	deadline := time.Now().Add(5 * time.Second)
	hung := -1
	for i := 0; time.Now().Before(deadline) && hung < 0; i++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = task.transferArtifacts(ws, filepath.Join(dir, "v"+strconv.Itoa(i)), nil)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // a transfer of one small file; only a hang takes this long
			hung = i + 1
			stop()
			for {
				release()
				select {
				case <-done:
				case <-time.After(10 * time.Millisecond):
					continue
				}
				break
			}
		}
	}
	stop()
	if hung > 0 {
		t.Fatalf("grading %d hung for 10 s in open(2) of a FIFO the agent swapped in after the copy's Lstat (released by the test)", hung)
	}
}
