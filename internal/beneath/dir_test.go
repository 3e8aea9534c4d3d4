package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// shaped is a directory laid out as a harness would leave it for the
// daemon: a file, a link out of it to a file and to a directory, a link
// inside it, and a FIFO; outside is the directory the links lead to.
func shaped(t *testing.T) (d Dir, outside string) {
	t.Helper()
	d, outside = Dir{Path: t.TempDir()}, t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("outside"), 0o600))
	must(os.WriteFile(filepath.Join(d.Path, "file"), []byte("inside"), 0o600))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(d.Path, "out-file")))
	must(os.Symlink(outside, filepath.Join(d.Path, "out-dir")))
	must(os.Symlink(filepath.Join(outside, "new"), filepath.Join(d.Path, "dangling")))
	must(os.Symlink("file", filepath.Join(d.Path, "in-file")))
	must(syscall.Mkfifo(filepath.Join(d.Path, "fifo"), 0o600))
	return d, outside
}

// ReadFile reads a regular file beneath the directory (the control), also
// through a link that stays beneath it, and refuses a link out of it (at
// the end or on the way), a FIFO without blocking, a path outside, and a
// file beyond the limit.
func TestDirReadFileStaysBeneath(t *testing.T) {
	d, outside := shaped(t)
	if b, err := d.ReadFile("file", 100); err != nil || string(b) != "inside" {
		t.Fatalf("the control: %q %v", b, err)
	}
	if b, err := d.ReadFile(filepath.Join(d.Path, "file"), 100); err != nil || string(b) != "inside" {
		t.Fatalf("the control by absolute path: %q %v", b, err)
	}
	if b, err := d.ReadFile("in-file", 100); err != nil || string(b) != "inside" {
		t.Fatalf("a link that stays beneath: %q %v", b, err)
	}
	for _, name := range []string{"out-file", "out-dir/secret", "fifo", "../x", filepath.Join(outside, "secret")} {
		if b, err := d.ReadFile(name, 100); err == nil {
			t.Errorf("%s: read %q", name, b)
		}
	}
	if _, err := d.ReadFile("missing", 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := d.ReadFile("file", 5); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a file over the limit: %v, want ErrTooLarge", err)
	}
}

// WriteFile writes and truncates a regular file beneath the directory,
// making its directories with the given modes (the control), and writes
// nothing outside through a link at the end, a dangling one, or one on the
// way; a FIFO is refused without blocking.
func TestDirWriteFileStaysBeneath(t *testing.T) {
	d, outside := shaped(t)
	if err := d.WriteFile("a/b/new", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile("file", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.Path, "file")); string(b) != "y" {
		t.Fatalf("not truncated: %q", b)
	}
	for p, want := range map[string]fs.FileMode{"a": 0o700, "a/b/new": 0o600} {
		if fi, err := os.Stat(filepath.Join(d.Path, p)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", p, fi.Mode(), err, want)
		}
	}
	for _, name := range []string{"out-file", "dangling", "out-dir/secret", "out-dir/new", "fifo"} {
		if err := d.WriteFile(name, []byte("escaped")); err == nil {
			t.Errorf("%s: written", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "outside" {
		t.Errorf("the file outside was rewritten: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(outside, "new")); err == nil {
		t.Error("a file was created outside")
	}
}

// LinkOrCopy links a file beneath the directory (the control) and never
// makes one outside or reads through a link out; Remove removes a link
// itself, never through one on the way.
func TestDirLinkOrCopyAndRemoveStayBeneath(t *testing.T) {
	d, outside := shaped(t)
	if err := d.LinkOrCopy("file", "x/linked"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.Path, "x/linked")); string(b) != "inside" {
		t.Fatalf("the control: %q", b)
	}
	if err := d.LinkOrCopy("file", "out-dir/linked"); err == nil {
		t.Error("linked into a directory outside")
	}
	if err := d.Remove("out-dir/secret"); err == nil {
		if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
			t.Error("removed a file outside through a link on the way")
		}
	}
	if err := d.Remove("out-file"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Error("removing a link removed its target")
	}
	if !d.Exists("dangling") || d.Exists("missing") || d.Exists("../x") {
		t.Error("Exists: a dangling link is there, a missing name and a path outside are not")
	}
}
