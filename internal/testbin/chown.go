package testbin

import (
	"os"
	"path/filepath"
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
