package episode

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process"
)

// testEnv is a process-isolation Env whose session directory is dir, with
// a quota of disk bytes per episode (0: none).
func testEnv(tb testing.TB, dir string, disk int64) *Env {
	tb.Helper()
	d := units.ByteSize(disk)
	cfg := &config.Config{}
	cfg.Harness.Command = []string{"/bin/true"}
	cfg.Limits.Disk = &d
	if err := cfg.Normalize(); err != nil {
		tb.Fatal(err)
	}
	sup, err := process.NewSupervisor(process.Options{Cgroup: process.ModeOff})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sup.Close(context.Background(), 0) })
	e := &Env{Config: cfg, Supervisor: sup, Isolation: config.IsolationProcess, Dir: dir}
	if err := e.Init(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.ReleaseDir)
	return e
}

// needQuota skips (fails under CI=true) where this host cannot mount a
// quota image.
func needQuota(tb testing.TB) {
	tb.Helper()
	if err := quota.Probe(context.Background(), tb.TempDir()); err != nil {
		testbin.Missing(tb, "disk quota: %v", err)
	}
}

func openDirs(tb testing.TB, e *Env, from *Snapshot) *Episode {
	tb.Helper()
	ep, err := Open(context.Background(), Spec{Env: e, ID: fmt.Sprintf("ep-%d", time.Now().UnixNano()), From: from}, LevelDirectories)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ep.Close(context.Background()) })
	return ep
}

func write(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func readOr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// harnessUID stands for the parent's sandbox uid (another range's).
const harnessUID = 1<<30 + 1000

// fillParent writes what the tests look for in a fresh episode's
// directories; it returns the fixed modification time it set.
func fillParent(t *testing.T, ep *Episode) time.Time {
	t.Helper()
	d := ep.Dirs()
	write(t, filepath.Join(d.Workspace, "notes.txt"), "parent wrote this")
	write(t, filepath.Join(d.Workspace, "src/deep/main.go"), "package main")
	write(t, filepath.Join(d.Home, ".agent/session.jsonl"), `{"turn":1}`)
	write(t, filepath.Join(d.Tmp, "scratch"), "tmp data")
	write(t, filepath.Join(d.Workspace, "run.sh"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(d.Workspace, "run.sh"), 0o751)
	if err := os.Symlink("notes.txt", filepath.Join(d.Workspace, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(d.Workspace, "notes.txt"), filepath.Join(d.Workspace, "hard")); err != nil {
		t.Fatal(err)
	}
	// A sparse file: 1 byte at 64 MiB.
	f, err := os.Create(filepath.Join(d.Workspace, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{1}, 64<<20)
	f.Close()
	mt := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	os.Chtimes(filepath.Join(d.Workspace, "notes.txt"), mt, mt)
	os.Chtimes(filepath.Join(d.Workspace, "src/deep"), mt, mt)
	// Files the harness's uid owns, as a sandboxed harness's are.
	if os.Geteuid() == 0 {
		os.Lchown(filepath.Join(d.Workspace, "src/deep/main.go"), harnessUID, harnessUID)
		os.Lchown(filepath.Join(d.Home, ".agent"), harnessUID, harnessUID)
	}
	// The daemon's own file beside the directories (the MCP config with
	// the parent's bridge token).
	write(t, filepath.Join(d.Root, "mcp.json"), "parent-token")
	return mt
}

// checkRestored checks that ep's directories hold what fillParent wrote,
// owned by the daemon.
func checkRestored(t *testing.T, ep *Episode, mt time.Time) {
	t.Helper()
	d := ep.Dirs()
	for p, want := range map[string]string{
		filepath.Join(d.Workspace, "notes.txt"):           "parent wrote this",
		filepath.Join(d.Workspace, "src/deep/main.go"):    "package main",
		filepath.Join(d.Home, ".agent/session.jsonl"):     `{"turn":1}`,
		filepath.Join(d.Tmp, "scratch"):                   "tmp data",
		filepath.Join(d.Workspace, "link"):                "parent wrote this",
		filepath.Join(d.Workspace, "hard"):                "parent wrote this",
		filepath.Join(d.Workspace, "src/../run.sh"):       "#!/bin/sh\n",
		filepath.Join(d.Home, ".agent/../.agent/missing"): "<open " + filepath.Join(d.Home, ".agent/missing") + ": no such file or directory>",
	} {
		if got := readOr(p); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	if l, err := os.Readlink(filepath.Join(d.Workspace, "link")); err != nil || l != "notes.txt" {
		t.Errorf("link: %q, %v", l, err)
	}
	fi, err := os.Stat(filepath.Join(d.Workspace, "run.sh"))
	if err != nil || fi.Mode().Perm() != 0o751 {
		t.Errorf("run.sh mode %v, %v", fi.Mode(), err)
	}
	for _, p := range []string{"notes.txt", "src/deep"} {
		if fi, err := os.Stat(filepath.Join(d.Workspace, p)); err != nil || !fi.ModTime().Equal(mt) {
			t.Errorf("%s: modified %v, want %v (%v)", p, fi.ModTime(), mt, err)
		}
	}
	var a, b syscall.Stat_t
	syscall.Stat(filepath.Join(d.Workspace, "notes.txt"), &a)
	syscall.Stat(filepath.Join(d.Workspace, "hard"), &b)
	if a.Ino != b.Ino || a.Nlink != 2 {
		t.Errorf("the hard link is not one: inodes %d %d, %d links", a.Ino, b.Ino, a.Nlink)
	}
	var sp syscall.Stat_t
	syscall.Stat(filepath.Join(d.Workspace, "sparse"), &sp)
	if sp.Size != 64<<20+1 || sp.Blocks*512 > 1<<20 {
		t.Errorf("sparse file: size %d, %d bytes allocated (want holes kept)", sp.Size, sp.Blocks*512)
	}
	if _, err := os.Lstat(filepath.Join(d.Root, "mcp.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the parent's MCP config came along: %v", err)
	}
	uid, gid := os.Geteuid(), os.Getegid()
	filepath.WalkDir(d.Root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		fi, _ := de.Info()
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s is owned by %d:%d, not the daemon's %d:%d (as a fresh episode's files)", p, st.Uid, st.Gid, uid, gid)
		}
		return nil
	})
}

func TestSnapshotForksTheDirectories(t *testing.T) {
	for _, c := range []struct {
		name   string
		disk   int64
		method string
	}{
		{"quota-image", 64 << 20, SnapshotImageCopy},
		{"tree", 0, SnapshotTreeCopy},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.disk > 0 {
				needQuota(t)
			}
			e := testEnv(t, filepath.Join(t.TempDir(), "session"), c.disk)
			parent := openDirs(t, e, nil)
			if (parent.disk != nil) != (c.disk > 0) {
				t.Fatalf("quota %v, want %v", parent.disk != nil, c.disk > 0)
			}
			mt := fillParent(t, parent)
			snap, err := parent.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer snap.Close()
			if snap.Method() != c.method {
				t.Errorf("method %q, want %q", snap.Method(), c.method)
			}
			if snap.Bytes() <= 0 {
				t.Errorf("snapshot occupies %d bytes", snap.Bytes())
			}
			// The parent goes on after the snapshot: not seen by siblings.
			write(t, filepath.Join(parent.Dirs().Workspace, "notes.txt"), "parent changed it later")

			// Siblings are sessions of their own: half of them open in
			// another session's directory.
			other := testEnv(t, filepath.Join(t.TempDir(), "session2"), c.disk)
			var sibs []*Episode
			for i := range 4 {
				env := e
				if i%2 == 1 {
					env = other
				}
				sibs = append(sibs, openDirs(t, env, snap))
			}
			for i, s := range sibs {
				if (s.disk != nil) != (c.disk > 0) {
					t.Errorf("sibling %d: quota %v", i, s.disk != nil)
				}
				checkRestored(t, s, mt)
				write(t, filepath.Join(s.Dirs().Workspace, "notes.txt"), fmt.Sprintf("sibling %d", i))
				write(t, filepath.Join(s.Dirs().Home, ".agent/session.jsonl"), fmt.Sprintf("sibling %d home", i))
				write(t, filepath.Join(s.Dirs().Tmp, fmt.Sprintf("own-%d", i)), "x")
			}
			for i, s := range sibs {
				if got := readOr(filepath.Join(s.Dirs().Workspace, "notes.txt")); got != fmt.Sprintf("sibling %d", i) {
					t.Errorf("sibling %d sees %q", i, got)
				}
				if got := readOr(filepath.Join(s.Dirs().Home, ".agent/session.jsonl")); got != fmt.Sprintf("sibling %d home", i) {
					t.Errorf("sibling %d's HOME has %q", i, got)
				}
				ents, _ := os.ReadDir(s.Dirs().Tmp)
				if len(ents) != 2 { // scratch and its own
					t.Errorf("sibling %d's TMPDIR holds %d entries: another's write is visible", i, len(ents))
				}
			}
			if got := readOr(filepath.Join(parent.Dirs().Workspace, "notes.txt")); got != "parent changed it later" {
				t.Errorf("parent sees %q", got)
			}
			if got := readOr(filepath.Join(parent.Dirs().Home, ".agent/session.jsonl")); got != `{"turn":1}` {
				t.Errorf("parent's HOME has %q", got)
			}
			// The snapshot itself is unchanged: a fifth episode sees the
			// parent's state at the snapshot.
			checkRestored(t, openDirs(t, e, snap), mt)

			// A sibling snapshots in turn (the snapshot of a restored episode).
			snap2, err := sibs[0].Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := readOr(filepath.Join(openDirs(t, e, snap2).Dirs().Workspace, "notes.txt")); got != "sibling 0" {
				t.Errorf("grandchild sees %q", got)
			}
			snap2.Close()
		})
	}
}

func TestSnapshotRefcountAndClose(t *testing.T) {
	e := testEnv(t, filepath.Join(t.TempDir(), "session"), 0)
	ep := openDirs(t, e, nil)
	write(t, filepath.Join(ep.Dirs().Workspace, "f"), "x")
	s, err := ep.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := s.Retain()
	s.Close()
	s.Close() // idempotent: does not drop r's reference
	if _, err := os.Stat(s.d.dir); err != nil {
		t.Fatalf("the snapshot went with a handle left: %v", err)
	}
	if s.Retain() != nil {
		t.Error("a closed handle retained")
	}
	if got := readOr(filepath.Join(openDirs(t, e, r).Dirs().Workspace, "f")); got != "x" {
		t.Errorf("restored %q", got)
	}
	r.Close()
	if _, err := os.Stat(s.d.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the last Close left the snapshot: %v", err)
	}
	if _, err := Open(context.Background(), Spec{Env: e, ID: "late", From: r}, LevelDirectories); err == nil {
		t.Error("an episode opened from a closed snapshot")
	}
}

// TestSnapshotOfALargeImageIsSmall: a 10 GiB quota image holding 1 MiB
// snapshots to (and restores from) a few MiB on the host.
func TestSnapshotOfALargeImageIsSmall(t *testing.T) {
	needQuota(t)
	e := testEnv(t, filepath.Join(t.TempDir(), "session"), 10<<30)
	ep := openDirs(t, e, nil)
	data := make([]byte, 1<<20)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(ep.Dirs().Workspace, "blob"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ep.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(s.d.image, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 10<<30 {
		t.Errorf("the image's size is %d, want 10 GiB", st.Size)
	}
	const bound = 8 << 20
	if got := st.Blocks * 512; got >= bound || got < 1<<20 {
		t.Errorf("the snapshot of a 10 GiB image holding 1 MiB occupies %d bytes (want 1 MiB..8 MiB)", got)
	}
	if s.Bytes() >= bound {
		t.Errorf("Bytes %d", s.Bytes())
	}
	sib := openDirs(t, e, s)
	if err := syscall.Stat(sib.disk.Image, &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Blocks * 512; got >= bound {
		t.Errorf("the restored image occupies %d bytes", got)
	}
	if b, _ := os.ReadFile(filepath.Join(sib.Dirs().Workspace, "blob")); !bytes.Equal(b, data) {
		t.Error("the restored blob differs")
	}
	if u, ok := sib.DiskUsage(); !ok || u.Total < 9<<30 {
		t.Errorf("the restored episode's quota is %+v, want the parent's 10 GiB", u)
	}
}

// TestSnapshotFreezesAWriter: a process writing the episode's file system
// all along (a harness's background job) blocks during the snapshot, and
// the snapshot is a file system that mounts and holds whole records.
func TestSnapshotFreezesAWriter(t *testing.T) {
	needQuota(t)
	e := testEnv(t, filepath.Join(t.TempDir(), "session"), 64<<20)
	ep := openDirs(t, e, nil)
	log := filepath.Join(ep.Dirs().Workspace, "log")
	cmd := exec.Command("/bin/sh", "-c", `echo "record 0" >> "$0"; echo started; i=0; while :; do i=$((i+1)); echo "record $i" >> "$0"; done`, log)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if _, err := out.Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		s, err := ep.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := readOr(filepath.Join(openDirs(t, e, s).Dirs().Workspace, "log"))
		s.Close()
		if len(got) == 0 || got[len(got)-1] != '\n' {
			t.Errorf("snapshot %d: the log ends in a torn record: %q", i, tail(got))
		}
	}
}

func tail(s string) string {
	if len(s) > 40 {
		return s[len(s)-40:]
	}
	return s
}

// TestSnapshotReflinks: on a host file system with reflinks (an xfs loop
// file system the test makes) the quota image is cloned, and a tree copy
// clones its files.
func TestSnapshotReflinks(t *testing.T) {
	needQuota(t)
	mnt := reflinkDir(t)
	for _, c := range []struct {
		name   string
		disk   int64
		method string
	}{
		{"quota-image", 10 << 30, SnapshotReflink},
		{"tree", 0, SnapshotTreeCopy},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := testEnv(t, filepath.Join(mnt, c.name), c.disk)
			ep := openDirs(t, e, nil)
			data := make([]byte, 8<<20)
			rand.Read(data)
			os.WriteFile(filepath.Join(ep.Dirs().Workspace, "blob"), data, 0o644)
			var before unix.Statfs_t
			syncAndStatfs(t, mnt, &before)
			s, err := ep.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Method() != c.method {
				t.Errorf("method %q, want %q", s.Method(), c.method)
			}
			sib := openDirs(t, e, s)
			if b, _ := os.ReadFile(filepath.Join(sib.Dirs().Workspace, "blob")); !bytes.Equal(b, data) {
				t.Error("the restored blob differs")
			}
			// Shared extents: the snapshot and the sibling together took far
			// less of the host file system than two copies of 8 MiB.
			var after unix.Statfs_t
			syncAndStatfs(t, mnt, &after)
			used := int64(before.Bfree-after.Bfree) * int64(after.Bsize)
			if used > 4<<20 {
				t.Errorf("the snapshot and a sibling took %d bytes of the xfs file system: not shared", used)
			}
			t.Logf("snapshot + sibling took %d KiB of the host file system", used>>10)
		})
	}
}

// reflinkDir mounts an xfs file system with reflinks (a loop image the
// test makes) and returns its mount point; it skips (fails under CI=true)
// without mkfs.xfs.
func reflinkDir(tb testing.TB) string {
	tb.Helper()
	mkfs, err := exec.LookPath("mkfs.xfs")
	if err != nil {
		for _, p := range []string{"/usr/sbin/mkfs.xfs", "/sbin/mkfs.xfs"} {
			if _, e := os.Stat(p); e == nil {
				mkfs, err = p, nil
			}
		}
	}
	if err != nil {
		testbin.Missing(tb, "mkfs.xfs (xfsprogs) is not installed: the reflink path is not exercised")
	}
	dir := tb.TempDir()
	img := filepath.Join(dir, "xfs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Truncate(img, 2<<30); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-m", "reflink=1", img).CombinedOutput(); err != nil {
		tb.Fatalf("mkfs.xfs: %v: %s", err, out)
	}
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o700)
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		tb.Fatalf("mount the xfs image: %v: %s", err, out)
	}
	tb.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt
}

func syncAndStatfs(t *testing.T, dir string, st *unix.Statfs_t) {
	t.Helper()
	unix.Sync()
	if err := unix.Statfs(dir, st); err != nil {
		t.Fatal(err)
	}
}

// Snapshots of one episode taken at once all succeed (one freeze at a
// time: a second FIFREEZE of a frozen file system fails with EBUSY).
func TestConcurrentSnapshots(t *testing.T) {
	needQuota(t)
	e := testEnv(t, filepath.Join(t.TempDir(), "session"), 64<<20)
	ep := openDirs(t, e, nil)
	write(t, filepath.Join(ep.Dirs().Workspace, "f"), "x")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := ep.Snapshot(context.Background())
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A cancelled snapshot fails, leaves nothing behind and the file system
// thawed: the episode writes on.
func TestCancelledSnapshotThaws(t *testing.T) {
	for _, c := range []struct {
		name string
		disk int64
	}{{"quota-image", 64 << 20}, {"tree", 0}} {
		t.Run(c.name, func(t *testing.T) {
			if c.disk > 0 {
				needQuota(t)
			}
			dir := filepath.Join(t.TempDir(), "session")
			e := testEnv(t, dir, c.disk)
			ep := openDirs(t, e, nil)
			write(t, filepath.Join(ep.Dirs().Workspace, "f"), "x")
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if s, err := ep.Snapshot(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("a cancelled snapshot: %v, %v", s, err)
			}
			ents, _ := os.ReadDir(dir)
			for _, en := range ents {
				if strings.HasPrefix(en.Name(), ".snapshot-") {
					t.Errorf("left %s", en.Name())
				}
			}
			write(t, filepath.Join(ep.Dirs().Workspace, "g"), "the file system is not frozen")
			if s, err := ep.Snapshot(context.Background()); err != nil {
				t.Errorf("the next snapshot: %v", err)
			} else {
				s.Close()
			}
		})
	}
}
