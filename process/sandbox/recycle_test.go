package sandbox_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/process/sandbox"
)

// TestARecycledSandboxKeepsNothingOfItsLastTenant plants what outlives a
// tenant's processes in every place a sandbox holds (files in its /tmp
// and /dev/shm, System V segments, semaphores and queues, a POSIX queue,
// a connection to a door the daemon's side still holds, one closed
// inside, a pid counter moved on) and looks for it
// from the next run: found without a recycle (the positive control),
// none of it after one, and the next process's pid is back below the
// planter's.
func TestARecycledSandboxKeepsNothingOfItsLastTenant(t *testing.T) {
	need(t)
	cfg := baseConfig(t)
	cfg.Seccomp = true
	cfg.Doors = []sandbox.Door{{Name: "d"}}
	ctx, sb := openSandbox(t, cfg)
	oldDoor := sb.Door("d")
	if r, _ := runAgain(t, ctx, sb, nil, "traces"); len(r.List) != 0 {
		t.Fatalf("a new sandbox holds %v", r.List)
	}
	held := make(chan net.Conn, 1)
	go func() {
		if c, err := oldDoor.Accept(); err == nil {
			held <- c // the daemon's end, kept open across the recycle
		}
	}()
	if r, _ := runAgain(t, ctx, sb, nil, "plant", oldDoor.Addr().String()); !r.OK {
		t.Fatalf("plant: %+v", r)
	}
	defer func() { (<-held).Close() }()
	kept, _ := runAgain(t, ctx, sb, nil, "traces")
	for _, want := range []string{"/tmp/planted", "/dev/shm/planted", "shm", "sem", "msg", "mq", "tcp"} {
		if !hasPrefixed(kept.List, want) {
			t.Errorf("without a recycle the next run does not find %q (found %v): the plant or the look is broken", want, kept.List)
		}
	}
	if err := sb.Recycle(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := runAgain(t, ctx, sb, nil, "traces")
	if len(after.List) != 0 {
		t.Errorf("after a recycle the next run finds %v", after.List)
	}
	if after.N >= kept.N {
		t.Errorf("after a recycle the next run is pid %d, the one before it %d: the pid counter tells how many the tenant used", after.N, kept.N)
	}
	if d := sb.Door("d"); d == nil || d == oldDoor {
		t.Errorf("the door was not opened again (%v)", d)
	}
}

// TestRecycleRefusesWhileARunGoes: a run that has not ended keeps its
// sandbox; the recycle fails without touching it.
func TestRecycleRefusesWhileARunGoes(t *testing.T) {
	need(t)
	ctx, sb := openSandbox(t, baseConfig(t))
	run, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: []string{agentCommand, "signal", "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Recycle(ctx); err == nil {
		t.Fatal("a sandbox with a run going was recycled")
	}
	if _, ended := run.Exit(); ended {
		t.Fatal("the refused recycle ended the run")
	}
}

func hasPrefixed(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// plantTraces leaves what outlives a process in each place a sandbox
// holds (the agent's "plant" mode).
func plantTraces(door string) result {
	for _, p := range []string{"/tmp/planted", "/dev/shm/planted"} {
		if err := os.WriteFile(p, []byte("for the next tenant"), 0o644); err != nil {
			return outcome(err)
		}
	}
	if _, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600); err != nil {
		return outcome(err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SEMGET, unix.IPC_PRIVATE, 1, unix.IPC_CREAT|0o600); e != 0 {
		return outcome(e)
	}
	if _, _, e := unix.Syscall(unix.SYS_MSGGET, unix.IPC_PRIVATE, unix.IPC_CREAT|0o600, 0); e != 0 {
		return outcome(e)
	}
	if fd, err := openQueue(unix.O_CREAT | unix.O_RDWR); err != nil {
		return outcome(err)
	} else {
		unix.Close(fd)
	}
	if err := leaveTimeWait(); err != nil {
		return outcome(err)
	}
	c, err := net.Dial("tcp", door)
	if err != nil {
		return outcome(err)
	}
	defer c.Close()
	for i := 0; i < 32; i++ { // pids used up
		if err := exec.Command("/bin/true").Run(); err != nil {
			return outcome(err)
		}
	}
	return result{OK: true}
}

// leaveTimeWait makes a loopback connection whose dialling end would wait
// in TIME_WAIT once closed (the sandbox keeps none).
func leaveTimeWait() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	s, err := ln.Accept()
	if err != nil {
		return err
	}
	c.Close()
	return s.Close()
}

// findTraces lists what plantTraces leaves that this run finds, and its
// own pid (the agent's "traces" mode).
func findTraces() result {
	r := result{OK: true, N: os.Getpid()}
	for _, d := range []string{"/tmp", "/dev/shm"} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			r.List = append(r.List, filepath.Join(d, e.Name()))
		}
	}
	for _, kind := range []string{"shm", "sem", "msg"} {
		if n := tableRows("/proc/sysvipc/" + kind); n > 0 {
			r.List = append(r.List, kind+":"+strconv.Itoa(n))
		}
	}
	if fd, err := openQueue(unix.O_RDONLY); err == nil {
		unix.Close(fd)
		r.List = append(r.List, "mq:/planted")
	}
	if n := connections("/proc/net/tcp") + connections("/proc/net/tcp6"); n > 0 {
		r.List = append(r.List, "tcp:"+strconv.Itoa(n))
	}
	return r
}

// tableRows counts a /proc table's rows below its header.
func tableRows(p string) int {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	return max(0, len(strings.Split(strings.TrimSpace(string(b)), "\n"))-1)
}

// connections counts the TCP sockets of a /proc/net table that are not
// listening (the doors are).
func connections(p string) int {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 3 && f[3] != "0A" {
			n++
		}
	}
	return n
}

// openQueue opens the POSIX message queue /planted with flags.
func openQueue(flags int) (int, error) {
	name, _ := unix.BytePtrFromString("planted")
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), uintptr(flags), 0o600, 0, 0, 0)
	if e != 0 {
		return -1, errors.New(e.Error())
	}
	return int(fd), nil
}

// TestRecycleKeepsABindBelowTmp: with a bind below the sandbox's /tmp
// (mounted there at setup), a recycle removes what the tenant wrote in
// /tmp entry by entry and keeps the bind (a new tmpfs would hide it): the
// file written is read before the recycle (the positive control) and gone
// after it, the bound file readable throughout.
func TestRecycleKeepsABindBelowTmp(t *testing.T) {
	need(t)
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "kept"), []byte("from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t)
	cfg.Binds = append(cfg.Binds, sandbox.Bind{Src: host, Dst: "/tmp/bound"})
	ctx, sb := openSandbox(t, cfg)
	if r, _ := runAgain(t, ctx, sb, nil, "write", "/tmp/left"); !r.OK {
		t.Fatalf("write /tmp/left: %+v", r)
	}
	if r, _ := runAgain(t, ctx, sb, nil, "read", "/tmp/left"); !r.OK || r.Value != "sandbox" {
		t.Fatalf("without a recycle /tmp/left is not read back: %+v", r)
	}
	if err := sb.Recycle(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := runAgain(t, ctx, sb, nil, "read", "/tmp/left"); r.OK {
		t.Errorf("after a recycle /tmp/left is still there: %+v", r)
	}
	if r, _ := runAgain(t, ctx, sb, nil, "read", "/tmp/bound/kept"); !r.OK || r.Value != "from the host" {
		t.Errorf("after a recycle the bind below /tmp is lost: %+v", r)
	}
}
