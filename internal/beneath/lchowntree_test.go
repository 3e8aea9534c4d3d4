package beneath

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

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
	give := func(uint32, uint32) (int, int, bool) { return uid, uid, true }
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

// A tree no deeper than MaxTreeDepth is given whole; one level more is an
// error naming the bound, so a tree made deep on purpose cannot cost the
// daemon a descriptor per level without end.
func TestLchownTreeDepthIsBounded(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "chowning to another uid needs root")
	}
	dir := t.TempDir()
	deepest := dir
	for range MaxTreeDepth - 1 {
		deepest = filepath.Join(deepest, "d")
	}
	if err := os.MkdirAll(deepest, 0o755); err != nil {
		t.Fatal(err)
	}
	give := func(uint32, uint32) (int, int, bool) { return 4242, 4242, true }
	if err := LchownTree(dir, give); err != nil {
		t.Fatalf("a tree %d deep: %v", MaxTreeDepth, err)
	}
	if got := testbin.Owner(t, deepest); got != 4242 {
		t.Fatalf("the deepest directory is uid %d, want 4242", got)
	}
	if err := os.Mkdir(filepath.Join(deepest, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := LchownTree(dir, give)
	if err == nil || !strings.Contains(err.Error(), "MaxTreeDepth") {
		t.Fatalf("a tree %d deep: err = %v, want one naming beneath.MaxTreeDepth", MaxTreeDepth+1, err)
	}
}

// An entry that already has the ids it is to be given is left alone (its
// change time stays), so a run's walk over a workspace the harness owns
// writes no inode; an entry with other ids is chowned (the control).
func TestLchownTreeLeavesOwnedEntriesAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "chowning to another uid needs root")
	}
	dir := t.TempDir()
	owned, other := filepath.Join(dir, "owned"), filepath.Join(dir, "other")
	for _, f := range []string{owned, other} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Lchown(owned, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	ctime := func(p string) unix.Timespec {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ctim
	}
	before := map[string]unix.Timespec{owned: ctime(owned), other: ctime(other)}
	// The change time has a clock tick's resolution: wait until a new
	// chown would show, by chowning a scratch file until its ctime moves.
	tick := filepath.Join(t.TempDir(), "tick")
	if err := os.WriteFile(tick, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for c0 := ctime(tick); ctime(tick) == c0; {
		if err := os.Lchown(tick, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := LchownTree(dir, func(uint32, uint32) (int, int, bool) { return 4242, 4242, true }); err != nil {
		t.Fatal(err)
	}
	if ctime(owned) != before[owned] {
		t.Errorf("an entry already owned by the ids was chowned again (its ctime moved)")
	}
	if ctime(other) == before[other] || testbin.Owner(t, other) != 4242 {
		t.Errorf("control: an entry of other ids was not chowned")
	}
}
