package beneath

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// LchownTree chowns a directory and what is in it; a file or a link
// named as dir is chowned alone, the link itself, not what it names.
func TestLchownTreeOfAFileOrALink(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "chowning to another uid needs root")
	}
	dir := t.TempDir()
	sub, file, target, link := filepath.Join(dir, "sub"), filepath.Join(dir, "file"), filepath.Join(dir, "target"), filepath.Join(dir, "link")
	for _, d := range []string{sub, target} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(sub, "f"), file} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	const uid = 4242
	give := func(*syscall.Stat_t) (int, int, bool) { return uid, uid, true }
	for _, p := range []string{sub, file, link} {
		if err := LchownTree(p, give); err != nil {
			t.Fatalf("LchownTree(%s): %v", p, err)
		}
	}
	owner := func(p string) uint32 {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Uid
	}
	for p, want := range map[string]uint32{sub: uid, filepath.Join(sub, "f"): uid, file: uid, link: uid, target: 0} {
		if got := owner(p); got != want {
			t.Errorf("%s is uid %d, want %d", p, got, want)
		}
	}
}
