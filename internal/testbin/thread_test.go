package testbin

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOnThrowawayThreadNeverRunsOnTheMainThread: fn runs on another
// thread than the main one each time, and no thread is reused after,
// whether OnThrowawayThread is called from a test's goroutine (20 times:
// a new goroutine lands on the idle main thread often) or from a goroutine
// locked to the main thread (the positive control: a goroutine of a test
// does land there, which is how a test unsharing namespaces wedged it).
func TestOnThrowawayThreadNeverRunsOnTheMainThread(t *testing.T) {
	var tids []int
	for range 20 {
		OnThrowawayThread(func() { tids = append(tids, unix.Gettid()) })
	}
	onMain := false
	for try := 0; try < 1000 && !onMain; try++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if onMain = unix.Gettid() == unix.Getpid(); !onMain {
				return
			}
			for range 3 {
				OnThrowawayThread(func() { tids = append(tids, unix.Gettid()) })
			}
		}()
		<-done
	}
	for i, tid := range tids {
		if tid == unix.Getpid() {
			t.Errorf("run %d ran on the main thread", i)
		}
		for _, other := range tids[:i] {
			if tid == other {
				t.Errorf("run %d reused thread %d, which an earlier run threw away", i, tid)
			}
		}
	}
	if !onMain {
		t.Errorf("control: no goroutine of 1,000 landed on the main thread (one that ran fn locked there wedges it)")
	} else if len(tids) != 23 {
		t.Errorf("%d runs, want 23", len(tids))
	}
}
