package session

import (
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// policies lists the policy of each thread of this process.
func policies(t *testing.T) map[int]uint32 {
	t.Helper()
	names, err := readTasks()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]uint32{}
	for _, n := range names {
		tid, _ := strconv.Atoi(n)
		if attr, err := unix.SchedGetAttr(tid, 0); err == nil {
			out[tid] = attr.Policy
		}
	}
	return out
}

// Batch gives every thread SCHED_BATCH and keeps the nice value; Normal
// gives the calling thread SCHED_OTHER back and no other thread; both
// leave a thread of another policy alone. The test puts every thread back
// to SCHED_OTHER when it ends.
func TestBatchThenNormal(t *testing.T) {
	if attr, err := unix.SchedGetAttr(0, 0); err != nil || attr.Policy != unix.SCHED_NORMAL {
		t.Fatalf("the test runs with policy %+v (%v): run it as SCHED_OTHER", attr, err)
	}
	t.Cleanup(func() {
		for tid := range policies(t) {
			setPolicy(tid, unix.SCHED_BATCH, unix.SCHED_NORMAL)
		}
	})
	// Normal on a SCHED_OTHER thread does nothing.
	if err := Normal(); err != nil {
		t.Fatal(err)
	}
	nice, _ := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err := Batch(); err != nil {
		t.Fatal(err)
	}
	for tid, p := range policies(t) {
		if p != unix.SCHED_BATCH {
			t.Errorf("thread %d has policy %d after Batch, want %d", tid, p, unix.SCHED_BATCH)
		}
	}
	if n, _ := unix.Getpriority(unix.PRIO_PROCESS, 0); n != nice {
		t.Errorf("priority %d after Batch, was %d", n, nice)
	}
	// Batch again: the process is SCHED_BATCH now, left as it is.
	if err := Batch(); err != nil {
		t.Fatal(err)
	}
	done := make(chan map[int]uint32)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := Normal(); err != nil {
			t.Error(err)
		}
		ps := policies(t)
		ps[-1] = uint32(unix.Gettid())
		done <- ps
	}()
	ps := <-done
	me := int(ps[-1])
	delete(ps, -1)
	for tid, p := range ps {
		want := uint32(unix.SCHED_BATCH)
		if tid == me {
			want = unix.SCHED_NORMAL
		}
		if p != want {
			t.Errorf("thread %d has policy %d after Normal on thread %d, want %d", tid, p, me, want)
		}
	}
}
