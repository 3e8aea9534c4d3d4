package process

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/internal/cgtree"
)

// superviseHelper is a daemon of its own: a Supervisor under the cgroup root
// in PROCESS_TEST_CGROUP_ROOT that prints its directory and lives until
// stdin closes.
func superviseHelper() int {
	s, err := NewSupervisor(Options{Cgroup: ModeRequired, Subreaper: ModeOff, CgroupRoot: os.Getenv("PROCESS_TEST_CGROUP_ROOT"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		return 2
	}
	fmt.Println(s.Mechanisms().CgroupPath)
	io.Copy(io.Discard, os.Stdin)
	s.Close(context.Background(), 0)
	return 0
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	c := exec.Command("/bin/true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// fakeDaemonDir makes a daemon directory for pid under root, last modified
// at mtime, and removes it (if still there) when the test ends.
func fakeDaemonDir(t *testing.T, root string, pid int, mtime time.Time) string {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprintf("harnessd-%d-%s", pid, newTreeID()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cgtree.RemoveTree(dir); os.Remove(dir) })
	if err := os.Chtimes(dir, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return dir
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// TestStartSweepsCgroupsOfGoneDaemons: a Supervisor's start removes the
// cgroup directories of daemons that are gone (killing what their trees
// left running) and never a live daemon's.
func TestStartSweepsCgroupsOfGoneDaemons(t *testing.T) {
	info := ProbeCgroup("")
	if !info.Writable || !info.Kill {
		testbin.Missing(t, "no writable cgroup v2 with cgroup.kill here: %s", info.Error)
	}
	// A root of this test's own below the usual one: the sweeps of this
	// test (which kill) see only directories this test made, never those
	// that other daemons on the host left beside ours.
	root := filepath.Join(info.Root, "sweeptest-"+newTreeID())
	if err := os.Mkdir(root, 0o755); err != nil {
		testbin.Missing(t, "cannot make a cgroup for the test: %v", err)
	}
	t.Cleanup(func() { os.Remove(root) })
	old := time.Now().Add(-time.Hour)

	// A live daemon in another process, whose directory is old (started
	// first: its own start sweeps too).
	daemon := exec.Command(os.Args[0], "-test.run=^$")
	daemon.Env = append(os.Environ(), helperEnv+"=supervise", "PROCESS_TEST_CGROUP_ROOT="+root)
	stdin, _ := daemon.StdinPipe()
	stdout, _ := daemon.StdoutPipe()
	daemon.Stderr = os.Stderr
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); daemon.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("live daemon did not report its cgroup: %v", err)
	}
	live := strings.TrimSpace(line)
	if err := os.Chtimes(live, old, old); err != nil {
		t.Fatal(err)
	}

	// A daemon killed with SIGKILL: its pid is gone, a process of one of
	// its trees still runs in a leaf.
	dead := fakeDaemonDir(t, root, deadPid(t), old)
	leaf := filepath.Join(dead, "harness-1")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	survivor := exec.Command("sleep", "600")
	if err := survivor.Start(); err != nil {
		t.Fatal(err)
	}
	defer survivor.Process.Kill()
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(survivor.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(dead, old, old)
	// Its pid reused by a younger process (this test binary, started after
	// the directory's time): still gone.
	reused := fakeDaemonDir(t, root, os.Getpid(), old)
	// Fresh: a daemon maybe between mkdir and lock.
	fresh := fakeDaemonDir(t, root, deadPid(t), time.Now())
	// Unlocked but its pid is a live process older than the directory (an
	// older daemon build that does not lock): kept.
	olderLive := fakeDaemonDir(t, root, 1, time.Now().Add(-30*time.Second))

	// Without KillLeftovers a populated leftover is left alone, and the
	// empty one (reused) removed.
	var logs bytes.Buffer
	keeper := newSup(t, Options{Cgroup: ModeRequired, Subreaper: ModeOff, CgroupRoot: root, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if !keeper.Mechanisms().Cgroup {
		t.Fatal("no cgroup")
	}
	if !exists(dead) || !strings.Contains(logs.String(), "left the cgroup of a gone daemon alone") {
		t.Fatalf("populated leftover %s swept without KillLeftovers:\n%s", dead, logs.String())
	}
	if exists(reused) {
		t.Errorf("empty leftover %s of a gone daemon not removed", reused)
	}
	keeper.Close(context.Background(), 0)

	logs.Reset()
	s := newSup(t, Options{Cgroup: ModeRequired, Subreaper: ModeOff, CgroupRoot: root, KillLeftovers: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if !s.Mechanisms().Cgroup {
		t.Fatal("no cgroup")
	}
	for _, dir := range []string{dead} {
		if exists(dir) {
			t.Errorf("leftover %s of a gone daemon not removed", dir)
		}
		if !strings.Contains(logs.String(), "path="+dir) {
			t.Errorf("removal of %s not logged:\n%s", dir, logs.String())
		}
	}
	for _, dir := range []string{live, fresh, olderLive} {
		if !exists(dir) {
			t.Errorf("%s removed; it may belong to a live daemon", dir)
		}
	}
	if err := survivor.Wait(); err == nil || survivor.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("process left in a gone daemon's cgroup: wait = %v, want killed by SIGKILL", err)
	}
	if !strings.Contains(logs.String(), "processes_killed=1") {
		t.Errorf("kill not logged:\n%s", logs.String())
	}
}
