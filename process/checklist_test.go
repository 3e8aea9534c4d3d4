package process

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/procfs"
)

// Scenarios from the reference's process-helper acceptance checklist.

// Checklist 25: start-up cancelled during readiness → cancellation surfaces,
// the child is reaped and nothing is left.
func TestReadinessCancelled(t *testing.T) {
	s := newSup(t, Options{})
	p, err := s.Start(agentSpec(t, "--never-ready"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err = p.WaitReady(ctx, isReady)
	var se *StartError
	if !errors.As(err, &se) || se.Reason != FailCancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want cancelled StartError wrapping context.Canceled", err)
	}
	<-p.Stopped()
	if p.Alive() || s.Live() != 0 {
		t.Fatal("child left after cancelled start-up")
	}
}

// Checklist 33: output lines then an unterminated last line, then exit →
// every line is delivered, then the stream ends.
func TestUnterminatedLastLine(t *testing.T) {
	s := newSup(t, Options{})
	p, err := s.Start(Spec{Path: "sh", Args: []string{"-c", `printf 'first\nsecond\nlast'`}, Env: DefaultEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), 0)
	var got []string
	for l := range p.Lines() {
		got = append(got, string(l.Text))
	}
	if strings.Join(got, "|") != "first|second|last" {
		t.Fatalf("lines %q", got)
	}
}

// Checklist 37: a reader waiting on the line stream when Stop runs is
// released (the stream closes) instead of hanging.
func TestPendingReadReleasedByStop(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t))
	released := make(chan bool)
	go func() {
		_, ok := <-p.Lines()
		released <- ok
	}()
	p.Stop(context.Background(), time.Second)
	select {
	case ok := <-released:
		if ok {
			t.Fatal("got a line from an idle harness")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pending read not released by Stop")
	}
}

// Checklist 39: non-ASCII text survives the round trip, and a second turn
// still yields a line.
func TestUnicodeRoundTrip(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t))
	out := strings.Join(turn(t, p, "reply ✓ hello 世界 😀"), "\n")
	if !strings.Contains(out, "✓ hello 世界 😀") {
		t.Fatalf("unicode mangled: %s", out)
	}
	if out := strings.Join(turn(t, p, "count"), "\n"); !strings.Contains(out, "turns: 2") {
		t.Fatalf("second turn: %s", out)
	}
}

// Checklist 40: the leader exits, leaving a SIGTERM-ignoring descendant that
// holds its pipes; Stop still kills the whole group and returns.
func TestStopAfterLeaderExitKillsDescendants(t *testing.T) {
	s := newSup(t, Options{Cgroup: ModeOff})
	p := startReady(t, s, agentSpec(t))
	child := pidFrom(t, turn(t, p, "spawn ignore-term;;exit 0"), "spawned")
	if _, err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !alive(child) {
		t.Fatal("descendant died with the leader; the scenario needs it alive")
	}
	if err := p.Stop(context.Background(), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if alive(child) {
		t.Fatalf("descendant %d survived Stop after its leader exited", child)
	}
}

func TestSignalReachesGroup(t *testing.T) {
	s := newSup(t, Options{Cgroup: ModeOff})
	p := startReady(t, s, agentSpec(t))
	child := pidFrom(t, turn(t, p, "spawn"), "spawned")
	if err := p.Signal(unix.SIGINT); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.Wait(context.Background()); st.Signal != "SIGINT" {
		t.Fatalf("leader exit %+v, want SIGINT", st)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(child) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if alive(child) {
		t.Fatal("group member did not get the signal")
	}
	p.Stop(context.Background(), 0)
	if err := p.Signal(unix.SIGINT); !errors.Is(err, ErrStopped) {
		t.Fatalf("signal after stop: %v", err)
	}
}

// A member that detached (setsid), scrubbed its environment (no tree
// marker) and lost its parent is still killed without a cgroup, because the
// tracker recorded it while its parent lived.
func TestRecordedMemberKilledAfterDetachAndScrub(t *testing.T) {
	s := newSup(t, Options{Cgroup: ModeOff})
	p := startReady(t, s, agentSpec(t))
	pid := pidFrom(t, turn(t, p, "orphan scrub linger=1s"), "orphaned")
	s.recordMembers() // a tracker tick while the intermediate still lives
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, ok := procfs.ReadStat(pid)
		if !ok {
			t.Fatal("sleeper died early")
		}
		if st.PPID == os.Getpid() || st.PPID == 1 { // the intermediate exited
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("intermediate never exited")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if procfs.EnvironContains(pid, TreeEnvVar+"="+p.treeID) {
		t.Fatal("the scrubbed sleeper still carries the marker; the scenario needs it gone")
	}
	if err := p.Stop(context.Background(), 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("detached, scrubbed member %d survived Stop", pid)
	}
}
