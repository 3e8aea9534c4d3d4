package spawner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/testbin"
)

// The main goroutine keeps the process's first thread: a goroutine that
// exits locked to that thread leaves it waiting rather than ending it, so
// onEndingThread's goroutines must run on others.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		os.Exit(Run()) // this test binary is the spawner it starts
	}
	os.Exit(m.Run())
}

// onEndingThread runs f on a thread of its own that ends when f returns
// (a goroutine that exits locked ends its thread), and returns once that
// thread is gone.
func onEndingThread(t *testing.T, f func()) {
	t.Helper()
	tid := make(chan int)
	go testbin.OnThrowawayThread(func() { // never the main thread, which would not end
		f()
		tid <- unix.Gettid()
	})
	task := fmt.Sprintf("/proc/self/task/%d", <-tid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %s still runs 10 s after its locked goroutine ended", task)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestASpawnerOutlivesTheThreadThatStartedIt: a parent-death signal
// follows the thread that forked the child, not the process. The spawner
// was forked from whichever thread called Start, so it died when that
// thread ended, and outlived a SIGKILLed daemon for as long as that thread
// stayed in an uninterruptible wait (a red team's daemon, killed while a
// FIFREEZE waited for a write its harness held, stayed a zombie for
// minutes with its spawner and every sandbox running). Now every spawner
// is forked from a thread that lives as long as the daemon. The control:
// a child with the same parent-death signal forked on such a thread dies
// when the thread ends.
func TestASpawnerOutlivesTheThreadThatStartedIt(t *testing.T) {
	t.Run("control", func(t *testing.T) {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		var err error
		onEndingThread(t, func() { err = cmd.Start() })
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Logf("the child forked on the ended thread: %v", err)
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatal("control: a child with Pdeathsig outlived the thread that forked it by 10 s")
		}
	})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var sp *spawner
	onEndingThread(t, func() { sp, err = startSpawner(exe) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sp.conn.Close() // the spawner exits when its channel closes
		<-sp.dead
	}()
	select {
	case <-sp.dead:
		t.Fatal("the spawner died with the thread that started it")
	case <-time.After(2 * time.Second):
	}
}
