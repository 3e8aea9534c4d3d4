package session

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Scheduling policies. A sandbox's own processes, its spawner and its
// init, do bookkeeping between a harness's runs: each step of a reset
// wakes one of them. As SCHED_OTHER, a waking one preempts the task
// running on its CPU, most often an agent starting up, whose caches and
// TLB it then costs; as SCHED_BATCH it waits for that task's slice
// instead (it still gets its fair share of the CPU). The harness runs as
// any process does: the init's forker thread goes back to SCHED_OTHER
// before it forks one. Measured with 16 sandboxed sessions resetting at
// once (issue 28): 0.74-0.75 of bare kill+spawn's rate without, 0.76-0.79
// with, CPU per reset 10.3-10.4 ms against 9.7-10.1.

// maxBatchPasses bounds Batch's passes over the threads: one started
// during a pass by a thread the pass had not reached yet is in the next.
const maxBatchPasses = 4

// Batch gives every thread of the calling process SCHED_BATCH, keeping its
// nice value, when the process runs as SCHED_OTHER; threads made later
// inherit it, and so do the processes they fork. It leaves a process of
// any other policy (SCHED_BATCH, SCHED_IDLE, a real-time one: the
// operator's choice) as it is. It needs /proc of the caller's own PID
// namespace, whose thread ids sched_setattr takes; under another one's it
// changes nothing and says so.
func Batch() error {
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return fmt.Errorf("/proc is not of this process's PID namespace (/proc/self is %q, %v)", self, err)
	}
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return err
	}
	if attr.Policy != unix.SCHED_NORMAL {
		return nil
	}
	for range maxBatchPasses {
		changed, err := batchPass()
		if err != nil || changed == 0 {
			return err
		}
	}
	return errors.New("threads kept starting as SCHED_OTHER")
}

// batchPass gives each thread listed in /proc/self/task SCHED_BATCH and
// returns how many it changed.
func batchPass() (int, error) {
	names, err := readTasks()
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, name := range names {
		tid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		done, err := setPolicy(tid, unix.SCHED_NORMAL, unix.SCHED_BATCH)
		if errors.Is(err, unix.ESRCH) {
			continue // the thread has ended
		}
		if err != nil {
			return changed, err
		}
		if done {
			changed++
		}
	}
	return changed, nil
}

// readTasks lists the calling process's threads.
func readTasks() ([]string, error) {
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// Normal gives the calling thread SCHED_OTHER, keeping its nice value,
// when it runs as SCHED_BATCH (Batch's): what the processes it forks
// then inherit. A thread of any other policy is left as it is, as is one
// whose policy cannot be read (sched_getattr refused by a seccomp filter
// of the daemon's container: Batch, which reads it first, changed
// nothing then either).
func Normal() error {
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil || attr.Policy != unix.SCHED_BATCH {
		return nil
	}
	return unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: attr.Nice}, 0)
}

// setPolicy gives thread tid (0: the caller) policy to when it has
// policy from, keeping its nice value; it reports whether it did.
func setPolicy(tid int, from, to uint32) (bool, error) {
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil || attr.Policy != from {
		return false, err
	}
	err = unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: to, Nice: attr.Nice}, 0)
	return err == nil, err
}
