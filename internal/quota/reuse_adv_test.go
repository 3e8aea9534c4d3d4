package quota_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/quota"
)

// Red-team tests of EmptyKeeping (issue 28): the kept top directories of
// an episode's disk are the harness's while it runs (the sandbox chowns
// them to its uid), so a tenant may mark them themselves, not only fill
// them.

// asTenant runs name with args as uid and gid 1000 without capabilities
// (what a sandboxed harness is, as far as the disk can tell).
func asTenant(t *testing.T, name string, args ...string) error {
	t.Helper()
	c := exec.Command(name, args...)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	out, err := c.CombinedOutput()
	if err != nil {
		t.Logf("%s %v as uid 1000: %v: %s", name, args, err, out)
	}
	return err
}

// inodeFlags reads dir's inode flags (FS_IOC_GETFLAGS, lsattr's).
func inodeFlags(t *testing.T, dir string) uint32 {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tenantDisk mounts a quota file system with the kept directories
// workspace and home, the workspace given to uid 1000, and returns it with
// its skeleton usage.
func tenantDisk(t *testing.T) (*quota.FS, quota.Usage, string) {
	t.Helper()
	need(t)
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // the tenant walks to its directory
	os.Chmod(dir, 0o755)
	fs, err := quota.Mount(context.Background(), filepath.Join(dir, "mnt"), filepath.Join(dir, "img"), size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Unmount() })
	for _, k := range []string{"workspace", "home"} {
		if err := os.Mkdir(filepath.Join(fs.Dir, k), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	skeleton, err := fs.Usage()
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(fs.Dir, "workspace")
	os.Chmod(fs.Dir, 0o711)
	if err := os.Chown(ws, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	return fs, skeleton, ws
}

// TestEmptyKeepingResetsTheTopDirectoriesTimesAndFlags: the tenant, as
// the owner of its workspace, sets the directory's access and
// modification times to 64 bits each of its choosing (utimensat) and
// sets inode flags an owner may set without a capability (chattr +dA:
// no dump, no atime). EmptyKeeping gives the directory back private and
// the caller's; the next tenant must find it as the skeleton had it. The
// positive control: the marks are there before EmptyKeeping.
//
// Found by the red team (the times and flags were kept); EmptyKeeping now
// gives them the time of the emptying and clears the flags.
func TestEmptyKeepingResetsTheTopDirectoriesTimesAndFlags(t *testing.T) {
	fs, skeleton, ws := tenantDisk(t)
	flags0 := inodeFlags(t, ws)
	const payload = "@4102444800.123456789" // 2100-01-01, to the nanosecond
	if err := asTenant(t, "/usr/bin/touch", "-d", payload, ws); err != nil {
		t.Fatal(err)
	}
	if err := asTenant(t, "/usr/bin/chattr", "+dA", ws); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(ws, &st); err != nil || st.Atim.Sec != 4102444800 || st.Mtim.Nsec != 123456789 {
		t.Fatalf("the tenant's times did not take: %+v %v", st.Atim, err)
	}
	if inodeFlags(t, ws) == flags0 {
		t.Fatal("the tenant's flags did not take")
	}
	if err := fs.EmptyKeeping(skeleton, []string{"workspace", "home"}); err != nil {
		t.Fatalf("EmptyKeeping: %v", err)
	}
	if err := unix.Stat(ws, &st); err != nil {
		t.Fatal(err)
	}
	if st.Atim.Sec == 4102444800 || st.Mtim.Sec == 4102444800 {
		t.Errorf("after EmptyKeeping the workspace's times are the last tenant's: atime %d.%09d, mtime %d.%09d",
			st.Atim.Sec, st.Atim.Nsec, st.Mtim.Sec, st.Mtim.Nsec)
	}
	if f := inodeFlags(t, ws); f != flags0 {
		t.Errorf("after EmptyKeeping the workspace's inode flags are %#x, the skeleton's %#x", f, flags0)
	}
}

// TestEmptyKeepingBoundsTheNamesItRemoves: EmptyKeeping removes files one
// by one up to MaxReuseInodes (4096), above which a new file system
// costs less; a tenant's 6000 hard links to one file are 6001 names of
// one inode (ext4 charges a name nothing but directory space).
//
// Found by the red team (the bound counted inodes only, a cost, not a
// leak); the names are now counted as they are read, each read's before
// any of them is removed, so the work stops a read past the bound. The
// positive control: the names are there before.
func TestEmptyKeepingBoundsTheNamesItRemoves(t *testing.T) {
	fs, skeleton, ws := tenantDisk(t)
	sub := filepath.Join(ws, "links")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(sub, "f")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const names = 6000
	for i := range names {
		if err := os.Link(f, filepath.Join(sub, strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if ents, _ := os.ReadDir(sub); len(ents) != names+1 {
		t.Fatalf("%d names, want %d", len(ents), names+1)
	}
	if err := fs.EmptyKeeping(skeleton, []string{"workspace", "home"}); err == nil {
		t.Errorf("EmptyKeeping removed %d names of one inode one by one: its bound of %d counts inodes only", names+1, quota.MaxReuseInodes)
	}
}

// TestEmptyKeepingRemovesInOnePassWithoutFollowingLinks: the emptying
// that counts names as it removes them (no walk first) removes a
// directory of more entries than it reads at once, trees below the kept
// directories and beside them, and links to a host directory without
// touching what they name. The control: the links' target holds its files
// and the tree is there before.
func TestEmptyKeepingRemovesInOnePassWithoutFollowingLinks(t *testing.T) {
	fs, skeleton, ws := tenantDisk(t)
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "precious"), []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	many := filepath.Join(ws, "many")
	if err := os.MkdirAll(filepath.Join(many, "a", "b", "c"), 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := os.WriteFile(filepath.Join(many, strconv.Itoa(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, link := range []string{filepath.Join(ws, "tohost"), filepath.Join(many, "a", "b", "c", "tohost"), filepath.Join(fs.Dir, "home", "tohost")} {
		if err := os.Symlink(host, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(fs.Dir, "beside", "deep"), 0o700); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(many); len(ents) != 1001 {
		t.Fatalf("control: %d entries in the tenant's directory, want 1001", len(ents))
	}
	if err := fs.EmptyKeeping(skeleton, []string{"workspace", "home"}); err != nil {
		t.Fatalf("EmptyKeeping: %v", err)
	}
	for _, dir := range []string{fs.Dir, ws, filepath.Join(fs.Dir, "home")} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if dir == fs.Dir && len(ents) == 2 {
			continue // workspace and home
		}
		if dir != fs.Dir && len(ents) == 0 {
			continue
		}
		t.Errorf("after EmptyKeeping %s holds %d entries", dir, len(ents))
	}
	if b, err := os.ReadFile(filepath.Join(host, "precious")); err != nil || string(b) != "host" {
		t.Errorf("the host directory a link named lost its file: %q, %v", b, err)
	}
}

// BenchmarkEmptyKeeping: emptying a disk as a reset leaves it (a file
// and a directory holding one in each kept directory); the writes are
// not timed.
func BenchmarkEmptyKeeping(b *testing.B) {
	need(b)
	dir := b.TempDir()
	fs, err := quota.Mount(context.Background(), filepath.Join(dir, "mnt"), filepath.Join(dir, "img"), size)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fs.Unmount() })
	keep := []string{"workspace", "home", "tmp"}
	for _, k := range keep {
		if err := os.Mkdir(filepath.Join(fs.Dir, k), 0o700); err != nil {
			b.Fatal(err)
		}
	}
	skeleton, err := fs.Usage()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		for _, k := range keep {
			d := filepath.Join(fs.Dir, k, "d")
			if err := os.Mkdir(d, 0o700); err != nil {
				b.Fatal(err)
			}
			for _, f := range []string{filepath.Join(fs.Dir, k, "f"), filepath.Join(d, "g")} {
				if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StartTimer()
		if err := fs.EmptyKeeping(skeleton, keep); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEmptyKeepingBoundsTheDirectoriesItHoldsOpen: the emptying holds one
// descriptor per level of the tree it removes, so a tree a tenant made
// deeper than the bound (128) fails the emptying (the disk is dropped, as
// for too many names) instead of holding a descriptor per level of the
// daemon's; a tree as deep as the bound is emptied (the control).
func TestEmptyKeepingBoundsTheDirectoriesItHoldsOpen(t *testing.T) {
	fs, skeleton, ws := tenantDisk(t)
	deep := func(levels int) string {
		p := filepath.Join(ws, "deep")
		for range levels - 1 {
			p = filepath.Join(p, "d")
		}
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deep(128)
	if err := fs.EmptyKeeping(skeleton, []string{"workspace", "home"}); err != nil {
		t.Fatalf("control: a tree 128 deep below the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "deep")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("control: the tree is still there after the emptying: %v", err)
	}
	deep(130)
	err := fs.EmptyKeeping(skeleton, []string{"workspace", "home"})
	if !errors.Is(err, quota.ErrNotFresh) || !strings.Contains(err.Error(), "deeper than") {
		t.Fatalf("a tree 130 deep below the workspace: err = %v, want ErrNotFresh naming the depth", err)
	}
}
