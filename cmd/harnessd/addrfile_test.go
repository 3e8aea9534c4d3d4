package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// mkfifo makes a FIFO of the test's own (never the real /dev/null).
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

func isFIFO(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeNamedPipe != 0
}

func TestWriteAddrFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	toFIFO := filepath.Join(dir, "to-fifo")
	os.Symlink(fifo, toFIFO)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nothing"), dangling)
	for path, want := range map[string]string{
		fifo:     "is a FIFO, not a regular file: refusing to replace it",
		sub:      "is a directory, not a regular file",
		toFIFO:   "is a symlink to " + fifo + " (a FIFO), not a regular file",
		dangling: "is a symlink that does not resolve",
	} {
		err := writeAddrFile(path, "127.0.0.1:1\n")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", path, err, want)
		}
	}
	if !isFIFO(t, fifo) {
		t.Error("the FIFO was replaced")
	}
	if fi, err := os.Lstat(toFIFO); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Error("the symlink to the FIFO was replaced")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}

func TestWriteAddrFileRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "addr")
	for _, content := range []string{"127.0.0.1:1\n", "127.0.0.1:2\n"} { // create, then replace
		if err := writeAddrFile(fresh, content); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(fresh); string(b) != content {
			t.Fatalf("content %q, want %q", b, content)
		}
	}
	// A symlink to a regular file keeps being a symlink; its target changes.
	link := filepath.Join(dir, "link")
	os.Symlink(fresh, link)
	if err := writeAddrFile(link, "127.0.0.1:3\n"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Error("the symlink was replaced by a file")
	}
	if b, _ := os.ReadFile(fresh); string(b) != "127.0.0.1:3\n" {
		t.Errorf("target content %q", b)
	}
}

// The real binary refuses --addr-file on a FIFO with a clear error, and
// the FIFO is still a FIFO afterwards.
func TestServeAddrFileRefusesFIFO(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	r := harnessdIn(t, dir, "serve", "--listen", "127.0.0.1:0", "--addr-file", fifo, "--log-level", "error", "--", th, "agent")
	want := "harnessd serve: --addr-file: " + fifo + " is a FIFO, not a regular file: refusing to replace it\n"
	if r.code != exitFailure || !strings.HasSuffix(r.stderr, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}
	if !isFIFO(t, fifo) {
		t.Error("serve replaced the FIFO")
	}
}
