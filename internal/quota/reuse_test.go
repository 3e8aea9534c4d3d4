package quota_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/quota"
)

// marker is what a first writer leaves; a later one must never read it.
var marker = bytes.Repeat([]byte("harnessd-previous-episode-"), 40<<10) // ~1 MiB

// TestEmptyLeavesNothingOfTheWriterBefore: a first writer's files, its
// directory tree, its extended attributes and the data of a file it
// deleted are gone after Empty, which finds the file system back to its
// fresh usage; what a second writer allocates reads as its own data or
// as zeros. The positive control: the deleted file's data is still in
// the image's blocks (so it could have leaked), read from the host.
func TestEmptyLeavesNothingOfTheWriterBefore(t *testing.T) {
	fs := mountedForTest(t)
	fresh, err := fs.Usage()
	if err != nil {
		t.Fatal(err)
	}

	// The first writer.
	ws := filepath.Join(fs.Dir, "workspace")
	if err := os.MkdirAll(filepath.Join(ws, "deep", "er"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "deep", "er", "kept.txt"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(ws, "user.previous", []byte("episode"), 0); err != nil {
		t.Fatalf("setxattr: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ws, "gone.bin"), marker, 0o600); err != nil {
		t.Fatal(err)
	}
	syncFS(t, fs.Dir)
	if err := os.Remove(filepath.Join(ws, "gone.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(fs.Dir, 0o711); err != nil { // as a sandbox leaves it
		t.Fatal(err)
	}
	syncFS(t, fs.Dir)

	if err := fs.Empty(fresh); err != nil {
		t.Fatalf("Empty: %v", err)
	}

	// The positive control: the freed blocks still hold the data.
	img, err := os.ReadFile(fs.Image)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(img, marker[:4096]) {
		t.Fatal("control: the deleted file's data is not in the image, so this test shows nothing about reading it back")
	}

	// The second writer sees nothing of the first.
	if ents, err := os.ReadDir(fs.Dir); err != nil || len(ents) != 0 {
		t.Fatalf("the emptied root holds %v (%v)", ents, err)
	}
	if fi, err := os.Stat(fs.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the emptied root's mode: %v %v", fi.Mode(), err)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Getxattr(ws, "user.previous", make([]byte, 64)); !errors.Is(err, unix.ENODATA) {
		t.Fatalf("the new workspace has the old one's extended attribute: %v", err)
	}
	// Space allocated every way a writer can: written in part, extended
	// by truncate, preallocated. All of the free space, so that the old
	// blocks are among it.
	u, _ := fs.Usage()
	var files []string
	part := filepath.Join(ws, "part")
	if err := os.WriteFile(part, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(part, u.Avail/4); err != nil {
		t.Fatal(err)
	}
	files = append(files, part)
	pre := filepath.Join(ws, "pre")
	pf, err := os.Create(pre)
	if err != nil {
		t.Fatal(err)
	}
	for n := u.Avail; n > 4096; n /= 2 { // as much as will go
		if err := unix.Fallocate(int(pf.Fd()), 0, 0, n); err == nil {
			break
		}
	}
	pf.Close()
	files = append(files, pre)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, marker[:64]) {
			t.Fatalf("%s reads the previous writer's deleted data", p)
		}
	}
}

// TestEmptyRefusesWhatItCannotMakeFresh: a deleted file still held open
// (a process of the writer before still running) keeps its inode and its
// blocks; Empty says the file system is not fresh instead of handing it
// on. The control: once the file is closed, Empty succeeds.
func TestEmptyRefusesWhatItCannotMakeFresh(t *testing.T) {
	fs := mountedForTest(t)
	fresh, _ := fs.Usage()
	held, err := os.Create(filepath.Join(fs.Dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Write(marker); err != nil {
		t.Fatal(err)
	}
	if err := fs.Empty(fresh); !errors.Is(err, quota.ErrNotFresh) {
		t.Fatalf("Empty with a deleted file held open: %v, want ErrNotFresh", err)
	}
	held.Close()
	if err := fs.Empty(fresh); err != nil {
		t.Fatalf("Empty once the file is closed: %v", err)
	}
	// An extended attribute on the root itself is refused as well.
	if err := unix.Setxattr(fs.Dir, "user.left", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := fs.Empty(fresh); !errors.Is(err, quota.ErrNotFresh) {
		t.Fatalf("Empty with an attribute on the root: %v, want ErrNotFresh", err)
	}
}

func syncFS(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
}

// TestEmptyKeepingKeepsTheTopDirectoriesThemselves: the kept directories
// are the same inodes afterwards (a bind of them stays valid), empty,
// private and the caller's; everything else is gone and the usage is
// the skeleton's. A kept directory the writer carries an attribute on, or
// one the writer grew, is refused; a kept name that is no longer a
// directory too.
func TestEmptyKeepingKeepsTheTopDirectoriesThemselves(t *testing.T) {
	fs := mountedForTest(t)
	keep := []string{"workspace", "home"}
	for _, k := range keep {
		if err := os.Mkdir(filepath.Join(fs.Dir, k), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	skeleton, _ := fs.Usage()
	before, _ := os.Stat(filepath.Join(fs.Dir, "workspace"))
	ws := filepath.Join(fs.Dir, "workspace")
	if err := os.MkdirAll(filepath.Join(ws, "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "deep", "f"), marker, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fs.Dir, "mcp.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(fs.Dir, "home"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := fs.EmptyKeeping(skeleton, keep); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(ws)
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("the workspace is not the same directory afterwards (%v)", err)
	}
	for _, k := range keep {
		fi, _ := os.Stat(filepath.Join(fs.Dir, k))
		ents, _ := os.ReadDir(filepath.Join(fs.Dir, k))
		if fi.Mode().Perm() != 0o700 || len(ents) != 0 {
			t.Errorf("%s: mode %v, %d entries", k, fi.Mode().Perm(), len(ents))
		}
	}
	if ents, _ := os.ReadDir(fs.Dir); len(ents) != len(keep) {
		t.Errorf("the root holds %d entries, want the %d kept", len(ents), len(keep))
	}

	if err := unix.Setxattr(ws, "user.left", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := fs.EmptyKeeping(skeleton, keep); !errors.Is(err, quota.ErrNotFresh) {
		t.Errorf("EmptyKeeping with an attribute on a kept directory: %v, want ErrNotFresh", err)
	}
	unix.Removexattr(ws, "user.left")
	for i := range 400 { // a directory grown past one block stays grown
		os.WriteFile(filepath.Join(ws, fmt.Sprintf("a-rather-long-file-name-%04d", i)), nil, 0o600)
	}
	if err := fs.EmptyKeeping(skeleton, keep); !errors.Is(err, quota.ErrNotFresh) {
		t.Errorf("EmptyKeeping with a grown kept directory: %v, want ErrNotFresh", err)
	}
	os.Remove(ws)
	os.WriteFile(ws, nil, 0o600)
	if err := fs.EmptyKeeping(skeleton, keep); !errors.Is(err, quota.ErrNotFresh) {
		t.Errorf("EmptyKeeping with a kept name now a file: %v, want ErrNotFresh", err)
	}
}
