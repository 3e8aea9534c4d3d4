package quota_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/quota"
)

// A snapshot of a mounted quota file system, taken while a process keeps
// writing to it, is a clean, consistent ext4 file system (e2fsck finds
// nothing to fix, its superblock says clean), holds only the source's data
// extents, and mounts, any number of times, as file systems of their own.
func TestSnapshotIsAConsistentCopy(t *testing.T) {
	need(t)
	dir := t.TempDir()
	m := quota.NewMaker(filepath.Join(dir, "template.img"), 1<<30)
	fs, err := m.Mount(context.Background(), filepath.Join(dir, "src"), filepath.Join(dir, "src.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Unmount()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	if err := os.WriteFile(filepath.Join(fs.Dir, "blob"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `echo started; i=0; while :; do i=$((i+1)); echo "$i" > "$0/f$((i % 500))"; done`, fs.Dir)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	out.Read(make([]byte, 8))

	snap := filepath.Join(dir, "snap.img")
	method, err := fs.Snapshot(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if method != quota.MethodExtents {
		t.Logf("method %s (a host file system with reflinks)", method)
	}
	var st syscall.Stat_t
	syscall.Stat(snap, &st)
	if st.Size != 1<<30 || st.Blocks*512 > 8<<20 {
		t.Errorf("snapshot: size %d, %d bytes allocated", st.Size, st.Blocks*512)
	}
	sb := make([]byte, 2)
	f, _ := os.Open(snap)
	f.ReadAt(sb, 1024+0x3A)
	f.Close()
	if binary.LittleEndian.Uint16(sb)&1 == 0 {
		t.Error("the snapshot's superblock does not say clean")
	}
	if fsck := e2fsck(); fsck != "" {
		if out, err := exec.Command(fsck, "-fn", snap).CombinedOutput(); err != nil {
			t.Errorf("e2fsck -fn on the snapshot: %v\n%s", err, out)
		}
	} else {
		t.Log("no e2fsck: the snapshot's consistency is not checked by it")
	}
	for i := range 2 {
		c, how, err := quota.MountImage(context.Background(), filepath.Join(dir, "copy", string(rune('a'+i))), filepath.Join(dir, "copy.img"+string(rune('a'+i))), snap)
		if err != nil {
			t.Fatal(err)
		}
		if how == "" {
			t.Error("no method reported")
		}
		if b, _ := os.ReadFile(filepath.Join(c.Dir, "blob")); !bytes.Equal(b, data) {
			t.Errorf("copy %d: the blob differs", i)
		}
		os.WriteFile(filepath.Join(c.Dir, "blob"), []byte("changed"), 0o644)
		if u, err := c.Usage(); err != nil || u.Total < 900<<20 {
			t.Errorf("copy %d: usage %+v, %v", i, u, err)
		}
		c.Unmount()
	}
	// The copies' writes changed neither the snapshot nor the source.
	if b, _ := os.ReadFile(filepath.Join(fs.Dir, "blob")); !bytes.Equal(b, data) {
		t.Error("the source's blob changed")
	}
}

// CloneFile keeps holes: a file of 64 MiB holding 2 bytes copies to a few
// KiB.
func TestCloneFileKeepsHoles(t *testing.T) {
	dir := t.TempDir()
	src, err := os.Create(filepath.Join(dir, "src"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.WriteAt([]byte{1}, 0)
	src.WriteAt([]byte{2}, 64<<20)
	dst, err := os.Create(filepath.Join(dir, "dst"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := quota.CloneFile(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	syscall.Fstat(int(dst.Fd()), &st)
	if st.Size != 64<<20+1 || st.Blocks*512 > 1<<20 {
		t.Errorf("copy: size %d, %d bytes allocated", st.Size, st.Blocks*512)
	}
	b := make([]byte, 1)
	dst.ReadAt(b, 64<<20)
	if b[0] != 2 {
		t.Errorf("the last byte is %d", b[0])
	}
}

func e2fsck() string {
	if p, err := exec.LookPath("e2fsck"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/e2fsck", "/sbin/e2fsck"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// TestSnapshotGivesUpAFreezeAWriterHoldsOff: a splice from an empty pipe
// into a file of the file system holds a write open, and a freeze waits
// for it: the red team's harness kept a step from ever answering, a daemon
// thread in FIFREEZE for good. Snapshot gives up when its context ends
// (ErrFreezeTimedOut), refuses another snapshot while that freeze waits,
// and once the writer ends the file system is thawed: writes go on and a
// snapshot works again. The control: a snapshot before the writer.
func TestSnapshotGivesUpAFreezeAWriterHoldsOff(t *testing.T) {
	fs := mountedForTest(t)
	dir := t.TempDir()
	if _, err := fs.Snapshot(context.Background(), filepath.Join(dir, "before.img")); err != nil {
		t.Fatalf("control: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	out, err := os.OpenFile(filepath.Join(fs.Dir, "spliced"), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	spliced := make(chan struct{})
	tid := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		tid <- unix.Gettid()
		unix.Splice(int(r.Fd()), nil, int(out.Fd()), nil, 4096, 0)
		close(spliced)
	}()
	waitInSplice(t, <-tid)
	var release sync.Once
	releaseWriter := func() { release.Do(func() { w.Write([]byte("x")) }) }
	defer releaseWriter()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := within(t, func() error { _, err := fs.Snapshot(ctx, filepath.Join(dir, "held.img")); return err }); !errors.Is(err, quota.ErrFreezeTimedOut) {
		t.Fatalf("a snapshot while a write is held open: %v, want ErrFreezeTimedOut", err)
	}
	if _, err := fs.Snapshot(context.Background(), filepath.Join(dir, "again.img")); !errors.Is(err, quota.ErrFreezeTimedOut) {
		t.Fatalf("a snapshot while the first freeze waits: %v, want ErrFreezeTimedOut at once", err)
	}
	releaseWriter()
	<-spliced
	if err := within(t, func() error { return os.WriteFile(filepath.Join(fs.Dir, "after"), []byte("x"), 0o644) }); err != nil {
		t.Fatalf("a write once the writer ended: %v", err)
	}
	if _, err := fs.Snapshot(context.Background(), filepath.Join(dir, "after.img")); err != nil {
		t.Fatalf("a snapshot once the writer ended: %v", err)
	}
}

// waitInSplice waits until thread tid of this process is asleep in
// splice(2) (its /proc syscall line starts with the call's number).
func waitInSplice(t *testing.T, tid int) {
	t.Helper()
	path := fmt.Sprintf("/proc/self/task/%d/syscall", tid)
	want := strconv.Itoa(unix.SYS_SPLICE) + " "
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasPrefix(string(b), want) {
			return
		}
		time.Sleep(time.Millisecond) // a kernel state, read until it holds
	}
	t.Fatal("the splice did not start within 30 s")
}

// within runs f and returns its error, failing the test if f has not
// returned after 30 s (a hang, on a build that waits for good).
func within(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting after 30 s")
		return nil
	}
}
