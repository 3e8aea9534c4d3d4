package testbin

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// SwapDirWithLink stands for a live process of the harness: until stop,
// it renames dir/d away, puts a symbolic link to target in its place for
// a moment, and puts the directory back, over and over. A walk of dir
// that follows the link meanwhile reaches target.
func SwapDirWithLink(dir, target string) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d, keep := filepath.Join(dir, "d"), filepath.Join(dir, ".d")
		for !done.Load() {
			if os.Rename(d, keep) != nil {
				continue
			}
			_ = os.Symlink(target, d)
			time.Sleep(20 * time.Microsecond)
			_ = os.Remove(d)
			_ = os.Rename(keep, d)
		}
	}()
	return func() { done.Store(true); wg.Wait() }
}

// Owner is path's uid, not following a link at its end.
func Owner(tb testing.TB, path string) uint32 {
	tb.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// SwapTargets makes the two trees of a chown-race test beneath a temporary
// directory: ws, a workspace holding the directory d (the one
// SwapDirWithLink swaps), and host, standing for a host directory the
// daemon must never chown; each of ws/d and host holds files f0 … f<n-1>,
// owned by the test's uid.
func SwapTargets(tb testing.TB, n int) (ws, host string) {
	tb.Helper()
	dir := tb.TempDir()
	ws, host = filepath.Join(dir, "ws"), filepath.Join(dir, "host")
	for _, d := range []string{filepath.Join(ws, "d"), host} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(d, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return ws, host
}
