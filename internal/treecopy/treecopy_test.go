package treecopy

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A link out of the tree is copied as a link, never followed: nothing of
// what it points to lands in the copy (positive control: the link does
// lead there in the source). Set-id bits are dropped, the sticky bit kept.
func TestCopyFollowsNoLinkOut(t *testing.T) {
	src, outside, dst := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "copy")
	os.WriteFile(filepath.Join(outside, "secret"), []byte("host"), 0o600)
	if err := os.Symlink(outside, filepath.Join(src, "out")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(src, "out", "secret")); err != nil || string(b) != "host" {
		t.Fatalf("positive control: the link does not lead out: %v", err)
	}
	os.WriteFile(filepath.Join(src, "suid"), []byte("x"), 0o755)
	os.Chmod(filepath.Join(src, "suid"), os.ModeSetuid|0o755)
	os.Mkdir(filepath.Join(src, "sticky"), 0o755)
	os.Chmod(filepath.Join(src, "sticky"), os.ModeSticky|0o777)
	if fi, _ := os.Stat(filepath.Join(src, "suid")); fi.Mode()&os.ModeSetuid == 0 {
		t.Fatal("positive control: the source is not set-uid")
	}
	if err := Copy(context.Background(), src, dst, false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(dst, "out"))
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was not copied as a link: %v %v", fi, err)
	}
	filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "secret" {
			t.Errorf("the copy holds %s from outside the tree", p)
		}
		return nil
	})
	if fi, _ := os.Stat(filepath.Join(dst, "suid")); fi.Mode()&os.ModeSetuid != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("suid file: %v", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Join(dst, "sticky")); fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("sticky dir: %v", fi.Mode())
	}
	if n, err := Bytes(dst); err != nil || n <= 0 {
		t.Errorf("Bytes %d, %v", n, err)
	}
}
