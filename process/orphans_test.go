package process

import (
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// forkUntracked starts /bin/true as a child of the test process that
// this package does not track (an orphan's stand-in) and waits, without
// reaping it, until it is a zombie.
func forkUntracked(t *testing.T) int {
	t.Helper()
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true on PATH")
	}
	pid, err := syscall.ForkExec(bin, []string{"true"}, &syscall.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestReapOrphansReapsUntrackedZombiesOnly: an untracked child's zombie is
// seen (anyZombieChild) and reaped; a tracked one's is left to its Wait;
// with no zombie left, ReapOrphans returns at once with 0.
func TestReapOrphansReapsUntrackedZombiesOnly(t *testing.T) {
	orphan := forkUntracked(t)
	if !anyZombieChild() {
		t.Fatal("anyZombieChild: false with an exited child not reaped")
	}
	tracked := forkUntracked(t)
	children.Lock()
	children.pids[tracked] = struct{}{}
	children.Unlock()
	defer unregisterChild(tracked)

	if n := ReapOrphans(); n < 1 {
		t.Fatalf("ReapOrphans reaped %d, want the orphan", n)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(orphan, &ws, unix.WNOHANG, nil); err != unix.ECHILD {
		t.Fatalf("the orphan is still to reap: wait4 %v", err)
	}
	if pid, err := unix.Wait4(tracked, &ws, unix.WNOHANG, nil); err != nil || pid != tracked {
		t.Fatalf("the tracked child was reaped by ReapOrphans: wait4 %d %v", pid, err)
	}
	if anyZombieChild() {
		t.Fatal("anyZombieChild: true with every exited child reaped")
	}
	if n := ReapOrphans(); n != 0 {
		t.Fatalf("ReapOrphans reaped %d with no zombie", n)
	}
}
