package quota_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/quota"
)

// fdsAt lists this process's descriptors open at or below dir, and counts
// all of them.
func fdsAt(t *testing.T, dir string) (at []string, all int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the ReadDir's own descriptor, closed since
		}
		all++
		if p == dir || strings.HasPrefix(p, dir+"/") {
			at = append(at, e.Name()+" -> "+p)
		}
	}
	return at, all
}

// TestUsageFollowsWritesAndHoldsNothingPastUnmount: Usage (an fstatfs of
// the root's kept descriptor) reads what a statfs of the mount point
// reads, before and after writes; Unmount closes the descriptor first, so
// the unmount is not a lazy one of a busy file system (the loop device
// detaches, no descriptor of the process points there), and Usage then
// fails instead of reading the directory's parent file system. Over many
// file systems the process's descriptors do not grow.
func TestUsageFollowsWritesAndHoldsNothingPastUnmount(t *testing.T) {
	need(t)
	dir := t.TempDir()
	_, before := fdsAt(t, dir)
	for i := range 8 {
		mnt, img := filepath.Join(dir, "mnt"), filepath.Join(dir, "img")
		fs, err := quota.Mount(context.Background(), mnt, img, size)
		if err != nil {
			t.Fatal(err)
		}
		fresh := usageMatchesStatfs(t, fs)
		if _, err := fill(filepath.Join(mnt, "f"), 2<<20); err != nil {
			t.Fatal(err)
		}
		if u := usageMatchesStatfs(t, fs); fresh.Avail-u.Avail < 2<<20 || fresh.FreeInodes-u.FreeInodes != 1 {
			t.Fatalf("after writing 2 MiB into one file: usage %+v, fresh %+v", u, fresh)
		}
		if err := fs.Empty(fresh); err != nil {
			t.Fatalf("empty: %v", err)
		}
		usageMatchesStatfs(t, fs)
		if at, _ := fdsAt(t, mnt); len(at) != 1 {
			t.Fatalf("file system %d: want its root's one descriptor while mounted, got %v", i, at)
		}
		if err := fs.Unmount(); err != nil {
			t.Fatal(err)
		}
		if at, _ := fdsAt(t, dir); len(at) != 0 {
			t.Fatalf("descriptors left under %s after Unmount: %v", dir, at)
		}
		if m, err := quota.Mounted(mnt); err != nil || m {
			t.Fatalf("still mounted after Unmount: %v %v", m, err)
		}
		waitGone(t, dir)
		if _, err := fs.Usage(); !errors.Is(err, quota.ErrUnmounted) {
			t.Fatalf("Usage after Unmount: %v, want ErrUnmounted", err)
		}
	}
	if _, after := fdsAt(t, dir); after > before {
		t.Fatalf("the process has %d descriptors after 8 file systems, %d before", after, before)
	}
}

// usageMatchesStatfs returns fs.Usage after checking it against a statfs
// of the mount point.
func usageMatchesStatfs(t *testing.T, fs *quota.FS) quota.Usage {
	t.Helper()
	u, err := fs.Usage()
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(fs.Dir, &st); err != nil {
		t.Fatal(err)
	}
	want := quota.Usage{Total: int64(st.Blocks) * st.Bsize, Avail: int64(st.Bavail) * st.Bsize, Inodes: st.Files, FreeInodes: st.Ffree}
	if u != want {
		t.Fatalf("Usage %+v, statfs of %s %+v", u, fs.Dir, want)
	}
	return u
}
