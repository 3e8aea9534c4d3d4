package quota_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
)

// need skips (fails under CI=true) where this host cannot mount a quota.
func need(t testing.TB) {
	t.Helper()
	if err := quota.Probe(context.Background(), t.TempDir()); err != nil {
		testbin.Missing(t, "disk quota: %v", err)
	}
}

// fill writes a file of up to n bytes in 64 KiB chunks and returns how
// many were written and the error that stopped it.
func fill(path string, n int64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i)
	}
	var written int64
	for written < n {
		m, err := f.Write(buf)
		written += int64(m)
		if err != nil {
			f.Close()
			return written, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return written, err
	}
	return written, f.Close()
}

// allocated is the bytes the host's file system holds for path.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

func waitGone(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		devs, err := quota.LoopDevicesOf(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(devs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("loop devices still attached to images under %s: %v", dir, devs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const size = 8 << 20

func TestWritesStopAtTheQuota(t *testing.T) {
	need(t)
	dir := t.TempDir()
	mnt, img := filepath.Join(dir, "mnt"), filepath.Join(dir, "img")
	fs, err := quota.Mount(context.Background(), mnt, img, size)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Unmount()
	if ents, _ := os.ReadDir(mnt); len(ents) != 0 {
		t.Fatalf("a fresh file system holds %v", ents)
	}
	if u, err := fs.Usage(); err != nil || u.Full() || u.Avail < size/2 {
		t.Fatalf("fresh usage %+v, %v", u, err)
	}
	n, err := fill(filepath.Join(mnt, "big"), 2*size)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing %d bytes into an %d-byte quota: %d written, error %v (want ENOSPC)", 2*size, size, n, err)
	}
	if n >= size {
		t.Fatalf("%d bytes written past the %d-byte quota", n, size)
	}
	if a := allocated(t, img); a > size {
		t.Fatalf("the image holds %d bytes of the host's disk, more than the %d-byte quota", a, size)
	}
	u, err := fs.Usage()
	if err != nil || !u.Full() {
		t.Fatalf("after ENOSPC usage %+v is not full (%v)", u, err)
	}
	// Space freed is writable again.
	if err := os.Remove(filepath.Join(mnt, "big")); err != nil {
		t.Fatal(err)
	}
	if _, err := fill(filepath.Join(mnt, "small"), 1<<20); err != nil {
		t.Fatalf("after freeing the space: %v", err)
	}
	if err := fs.Unmount(); err != nil {
		t.Fatal(err)
	}
	if m, err := quota.Mounted(mnt); err != nil || m {
		t.Fatalf("still mounted after Unmount: %v %v", m, err)
	}
	if _, err := os.Stat(img); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the image outlived Unmount: %v", err)
	}
	waitGone(t, dir)
}

// The positive control: the same write without the quota goes past the
// bound.
func TestWritesWithoutTheQuotaGoPastTheBound(t *testing.T) {
	dir := t.TempDir()
	n, err := fill(filepath.Join(dir, "big"), 2*size)
	if err != nil || n != 2*size {
		t.Fatalf("unbounded write: %d bytes, %v", n, err)
	}
	if a := allocated(t, filepath.Join(dir, "big")); a < 2*size {
		t.Fatalf("the host holds only %d bytes", a)
	}
}

func TestUnmountBelowSweepsWhatAGoneOwnerLeft(t *testing.T) {
	need(t)
	dir := t.TempDir()
	var mounts []string
	var held *os.File
	for _, n := range []string{"a", "b c"} { // a space is escaped in mountinfo
		mnt := filepath.Join(dir, n, "mnt")
		if _, err := quota.Mount(context.Background(), mnt, filepath.Join(dir, n, "img"), quota.MinSize); err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, mnt)
		// A file held open keeps the file system busy.
		if n == "a" {
			f, err := os.Create(filepath.Join(mnt, "held"))
			if err != nil {
				t.Fatal(err)
			}
			held = f
		}
	}
	if devs, _ := quota.LoopDevicesOf(dir); len(devs) != 2 {
		t.Fatalf("loop devices under %s: %v", dir, devs)
	}
	done, err := quota.UnmountBelow(dir)
	if err != nil || len(done) != 2 {
		t.Fatalf("UnmountBelow: %v, %v", done, err)
	}
	for _, m := range mounts {
		if ok, _ := quota.Mounted(m); ok {
			t.Errorf("%s is still mounted", m)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatalf("the swept directory cannot be removed: %v", err)
	}
	// The busy one was detached lazily: its loop device goes with its
	// last user.
	held.Close()
	waitGone(t, dir)
}

// BenchmarkMountUnmount is the price of one quota: image, format, loop
// device, mount, and their undoing.
func BenchmarkMountUnmount(b *testing.B) {
	if err := quota.Probe(context.Background(), b.TempDir()); err != nil {
		testbin.Missing(b, "disk quota: %v", err)
	}
	for _, c := range []struct {
		sz       int64
		template bool
	}{{8 << 20, false}, {10 << 30, false}, {10 << 30, true}} {
		sz := c.sz
		name := fmt.Sprintf("%dMiB", sz>>20)
		if c.template {
			name += "-template"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			var m *quota.Maker
			if c.template {
				m = quota.NewMaker(filepath.Join(dir, "template.img"), sz)
			}
			var up, down time.Duration
			for i := range b.N {
				d := filepath.Join(dir, strconv.Itoa(i))
				t0 := time.Now()
				var fs *quota.FS
				var err error
				if m == nil {
					fs, err = quota.Mount(context.Background(), d+"/mnt", d+".img", sz)
				} else {
					fs, err = m.Mount(context.Background(), d+"/mnt", d+".img")
				}
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := fs.Unmount(); err != nil {
					b.Fatal(err)
				}
				up, down = up+t1.Sub(t0), down+time.Since(t1)
			}
			b.ReportMetric(float64(up.Microseconds())/float64(b.N)/1000, "mount-ms")
			b.ReportMetric(float64(down.Microseconds())/float64(b.N)/1000, "unmount-ms")
		})
	}
}

func TestMountRefusesATinySize(t *testing.T) {
	dir := t.TempDir()
	if _, err := quota.Mount(context.Background(), filepath.Join(dir, "m"), filepath.Join(dir, "img"), quota.MinSize-1); err == nil {
		t.Fatal("a size below MinSize was accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "img")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused mount left its image: %v", err)
	}
}

// A Maker's file systems, mounted side by side from one template, are
// each bounded and each their own.
func TestMakerMountsFromItsTemplate(t *testing.T) {
	need(t)
	dir := t.TempDir()
	m := quota.NewMaker(filepath.Join(dir, "template.img"), size)
	var all []*quota.FS
	for _, n := range []string{"a", "b"} {
		fs, err := m.Mount(context.Background(), filepath.Join(dir, n), filepath.Join(dir, n+".img"))
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Unmount()
		all = append(all, fs)
	}
	if err := os.WriteFile(filepath.Join(all[0].Dir, "only-a"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(all[1].Dir, "only-a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("two file systems of one template share a file: %v", err)
	}
	for _, fs := range all {
		n, err := fill(filepath.Join(fs.Dir, "big"), 2*size)
		if !errors.Is(err, syscall.ENOSPC) || n >= size {
			t.Fatalf("%s: %d bytes written, %v", fs.Dir, n, err)
		}
		if a := allocated(t, fs.Image); a > size {
			t.Fatalf("%s holds %d bytes", fs.Image, a)
		}
	}
	for _, fs := range all {
		if err := fs.Unmount(); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(dir, "template.img"))
	waitGone(t, dir)
}

// Files count too: a tree of empty files runs out of inodes with ENOSPC,
// and the file system reads as full.
func TestInodesRunOut(t *testing.T) {
	fs := mountedForTest(t)
	u, _ := fs.Usage()
	var n int
	for n = 0; n <= int(u.Inodes); n++ {
		f, err := os.Create(filepath.Join(fs.Dir, strconv.Itoa(n)))
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("file %d: %v (want ENOSPC)", n, err)
			}
			break
		}
		f.Close()
	}
	if n > int(u.Inodes) {
		t.Fatalf("%d files created on a file system of %d inodes", n, u.Inodes)
	}
	if u, err := fs.Usage(); err != nil || !u.Full() || u.FreeInodes != 0 {
		t.Fatalf("after %d files usage %+v is not full (%v)", n, u, err)
	}
}

// A host without the mechanism says so with ErrUnsupported (here: a user
// without the permission to use loop devices), which is what lets an
// unset limits.disk go without.
func TestUnsupportedIsMarked(t *testing.T) {
	if os.Getenv("QUOTA_TEST_CHILD") == "1" {
		dir, err := os.MkdirTemp("", "quota-child-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		_, err = quota.Mount(context.Background(), filepath.Join(dir, "m"), filepath.Join(dir, "img"), size)
		if !errors.Is(err, quota.ErrUnsupported) {
			t.Fatalf("as uid %d: %v, want ErrUnsupported", os.Geteuid(), err)
		}
		t.Logf("as uid %d: %v", os.Geteuid(), err)
		return
	}
	need(t) // root with the mechanism: the child is refused for want of permission alone
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary's build directory is root's alone: copy it where
	// the unprivileged child can run it.
	dir, err := os.MkdirTemp("", "quota-unsupported-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "quota.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^TestUnsupportedIsMarked$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "QUOTA_TEST_CHILD=1", "TMPDIR=/tmp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("the unprivileged child: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestFormatSurvivesTheOrphanReaper: the daemon's orphan reaper
// (process.ReapOrphans) runs on every SIGCHLD and reaps any zombie child
// the process package does not track; mke2fs is started as a tracked
// child, so its exit status stays its own (it used to fail "waitid: no
// child processes" when the reaper got there first).
func TestFormatSurvivesTheOrphanReaper(t *testing.T) {
	need(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reaped := make(chan int)
	go func() {
		n := 0
		for ctx.Err() == nil {
			n += process.ReapOrphans()
		}
		reaped <- n
	}()
	dir := t.TempDir()
	for i := range 8 {
		mnt, img := filepath.Join(dir, fmt.Sprint("mnt", i)), filepath.Join(dir, fmt.Sprint("img", i))
		fs, err := quota.Mount(context.Background(), mnt, img, size)
		if err != nil {
			t.Fatalf("mount %d with the reaper running: %v", i, err)
		}
		if err := fs.Unmount(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	t.Logf("the reaper took %d untracked children meanwhile", <-reaped)
}

// TestAFreshImageHoldsLittle: a 10 GiB episode file system, as made from
// the template, holds well under 1 MiB of data on the host (formatted
// without resize_inode's reserved blocks, which were 4.1 MB of it: every
// episode copies what the template holds).
func TestAFreshImageHoldsLittle(t *testing.T) {
	need(t)
	dir := t.TempDir()
	m := quota.NewMaker(filepath.Join(dir, "template.img"), 10<<30)
	fs, err := m.Mount(context.Background(), filepath.Join(dir, "ep"), filepath.Join(dir, "ep.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Unmount()
	for _, img := range []string{filepath.Join(dir, "template.img"), fs.Image} {
		if a := allocated(t, img); a > 1<<20 {
			t.Errorf("%s holds %d bytes of a fresh 10 GiB file system, want under 1 MiB", img, a)
		}
	}
}

// TestManyMountsAtOnce: 24 episodes of one daemon mounting at once all get
// a loop device (finding a free one and binding it race otherwise, and all
// but one lose each round).
func TestManyMountsAtOnce(t *testing.T) {
	need(t)
	dir := t.TempDir()
	m := quota.NewMaker(filepath.Join(dir, "template.img"), size)
	const n = 24
	errs := make(chan error, n)
	fss := make(chan *quota.FS, n)
	for i := range n {
		go func() {
			fs, err := m.Mount(context.Background(), filepath.Join(dir, fmt.Sprint(i)), filepath.Join(dir, fmt.Sprint(i)+".img"))
			if err != nil {
				errs <- err
				return
			}
			fss <- fs
			errs <- nil
		}()
	}
	var failed []error
	for range n {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	close(fss)
	for fs := range fss {
		fs.Unmount()
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d mounts at once failed, the first: %v", len(failed), n, failed[0])
	}
	waitGone(t, dir)
}

// mountedForTest mounts a quota of size in a directory of the test's own
// (skipping, or failing under CI=true, where this host cannot), unmounted
// when the test ends.
func mountedForTest(t *testing.T) *quota.FS {
	t.Helper()
	need(t)
	dir := t.TempDir()
	fs, err := quota.Mount(context.Background(), filepath.Join(dir, "mnt"), filepath.Join(dir, "img"), size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Unmount() })
	return fs
}
