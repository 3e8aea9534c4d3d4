package process

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/testbin"
)

// osThreads reads this process's OS thread count from /proc/self/status.
func osThreads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Threads:")); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				t.Fatalf("Threads line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// TestThreadsFlatWithHundredsOfChildren: 500 live children of the daemon
// cost no OS thread each (the reaper waits on pidfds through the runtime's
// poller), and every one of them is still reaped with its exact status. A
// thread per child would add 500, five times the growth allowed; 2,000
// children, as the test started before, took 23 s under the race detector.
func TestThreadsFlatWithHundredsOfChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 500 processes")
	}
	const n = 500
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 5*n {
		testbin.Missing(t, "RLIMIT_NOFILE %d is too low for %d children (4 descriptors each)", lim.Cur, n)
	}
	s := newSup(t, Options{Cgroup: ModeOff, Subreaper: ModeOff})
	before := osThreads(t)
	procs := make([]*Process, 0, n)
	defer func() {
		for _, p := range procs {
			p.Stop(context.Background(), 0)
		}
	}()
	for i := range n {
		p, err := s.Start(Spec{Name: "sleeper", Path: "sleep", Args: []string{"600"}, Env: DefaultEnviron(nil), Stdio: StdioRaw})
		if err != nil {
			t.Fatalf("start child %d: %v", i, err)
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		if !p.Alive() {
			t.Fatalf("child %d exited early", p.Pid())
		}
	}
	during := osThreads(t)
	t.Logf("OS threads: %d before, %d with %d live children", before, during, n)
	if during-before >= 100 {
		t.Fatalf("OS threads grew from %d to %d with %d live children: one thread per child?", before, during, n)
	}
	// Kill them all by hand: the reaper must collect each exact status.
	for _, p := range procs {
		unix.Kill(p.Pid(), unix.SIGKILL)
	}
	for _, p := range procs {
		st, err := p.Wait(context.Background())
		if err != nil || st != (ExitStatus{Code: -1, Signal: "SIGKILL"}) {
			t.Fatalf("child %d: exit %v, %v; want killed by SIGKILL", p.Pid(), st, err)
		}
	}
}

// TestExitStatusesExact: codes and signals come through the pidfd reaper
// unchanged.
func TestExitStatusesExact(t *testing.T) {
	s := newSup(t, Options{})
	for _, c := range []struct {
		script string
		want   ExitStatus
	}{
		{"exit 0", ExitStatus{Code: 0}},
		{"exit 3", ExitStatus{Code: 3}},
		{"exit 255", ExitStatus{Code: 255}},
		{"kill -TERM $$", ExitStatus{Code: -1, Signal: "SIGTERM"}},
		{"kill -SEGV $$", ExitStatus{Code: -1, Signal: "SIGSEGV"}},
	} {
		p, err := s.Start(Spec{Path: "/bin/sh", Args: []string{"-c", c.script}, Env: DefaultEnviron(nil)})
		if err != nil {
			t.Fatal(err)
		}
		st, err := p.Wait(context.Background())
		p.Stop(context.Background(), 0)
		if err != nil || st != c.want {
			t.Fatalf("%q: exit %v, %v; want %v", c.script, st, err, c.want)
		}
	}
}

// forkUntracked starts /bin/true as a child of the test process that
// this package does not track (an orphan's stand-in) and waits, without
// reaping it, until it is a zombie.
func forkUntracked(t *testing.T) int {
	t.Helper()
	bin, err := exec.LookPath("true")
	if err != nil {
		testbin.Missing(t, "true (coreutils) is not on PATH: the test's untracked child runs it")
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
