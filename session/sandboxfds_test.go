package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// devOf is the device of the file system path lies on (following links:
// /proc/self/fd/N gives its descriptor's).
func devOf(path string) (uint64, bool) {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0, false
	}
	return st.Dev, true
}

// fdsOn counts this process's descriptors on each of devs.
func fdsOn(t *testing.T, devs map[uint64]bool) map[uint64]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]int{}
	for _, e := range ents {
		if d, ok := devOf(filepath.Join("/proc/self/fd", e.Name())); ok && devs[d] {
			out[d]++
		}
	}
	return out
}

// TestSandboxMountsHeldOnlyByTheirEpisode: each turn's end checks the
// sandbox's own /tmp and /dev/shm through a descriptor of each kept from
// the first turn to the episode's end. Over episodes, the daemon holds one
// descriptor of each mount of the running episode's sandbox, none of an
// earlier episode's once that episode's background close is done (closed
// before its sandbox went, so nothing of the daemon's keeps a tmpfs and its
// pages), and none once the session closes.
func TestSandboxMountsHeldOnlyByTheirEpisode(t *testing.T) {
	s := sandboxed(t, nil)
	earlier := map[uint64]bool{}
	for i := range 4 {
		reset(t, s)
		for range 2 {
			if got := responseText(t, s, "reply ok"); got != "ok" {
				t.Fatalf("episode %d: %q", i, got)
			}
		}
		pid := s.State().HarnessPID
		cur := map[uint64]bool{}
		for _, m := range []string{"/tmp", "/dev/shm"} {
			d, ok := devOf(fmt.Sprintf("/proc/%d/root%s", pid, m))
			if !ok {
				t.Fatalf("episode %d: no %s in the sandbox", i, m)
			}
			cur[d] = true
		}
		for d, n := range fdsOn(t, cur) {
			if n != 1 {
				t.Fatalf("episode %d: %d descriptors of one of its sandbox's mounts (device %d), want 1", i, n, d)
			}
		}
		if got := fdsOn(t, cur); len(got) != len(cur) {
			t.Fatalf("episode %d: descriptors of its sandbox's mounts %v, want one of each of %v", i, got, cur)
		}
		old := map[uint64]bool{}
		for d := range earlier {
			if !cur[d] {
				old[d] = true
			}
		}
		// The previous episode is closed in the background (endPrevious):
		// its descriptors go with it, shortly after this episode started.
		waitFor(t, fmt.Sprintf("episode %d: the descriptors of earlier episodes' sandbox mounts to close", i), func() bool {
			return len(fdsOn(t, old)) == 0
		})
		for d := range cur {
			earlier[d] = true
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := fdsOn(t, earlier); len(got) != 0 {
		t.Fatalf("after Close, descriptors of the sandboxes' mounts are open: %v", got)
	}
}
