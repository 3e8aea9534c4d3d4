package process

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/procfs"
)

// children records the pids this package started and has not reaped yet, so
// that orphan reaping never steals an exit status from a tracked child. The
// lock is held across fork+exec so a child that dies at once is registered
// before any reaper can see its zombie.
var children = struct {
	sync.Mutex
	pids map[int]struct{}
}{pids: make(map[int]struct{})}

func unregisterChild(pid int) {
	children.Lock()
	delete(children.pids, pid)
	children.Unlock()
}

// enableSubreaper makes the daemon adopt orphaned descendants.
func enableSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// ReapOrphans reaps every zombie child of the daemon that this package did
// not start (orphans re-parented to a subreaper or to PID 1) and returns how
// many it reaped. Tracked children are left to their own Wait.
func ReapOrphans() int {
	if !anyZombieChild() {
		return 0
	}
	children.Lock()
	defer children.Unlock()
	n := 0
	for _, pid := range procfs.ChildPids() {
		if _, tracked := children.pids[pid]; tracked {
			continue
		}
		st, ok := procfs.ReadStat(pid)
		if !ok || !st.Dead() {
			continue
		}
		var ws unix.WaitStatus
		if pid, err := unix.Wait4(st.PID, &ws, unix.WNOHANG, nil); err == nil && pid == st.PID {
			n++
		}
	}
	return n
}

// anyZombieChild reports whether the daemon has a child that has exited
// and is not yet reaped (tracked or not), without reaping it: when none
// has, ReapOrphans has nothing to do and skips reading /proc (a SIGCHLD
// storm of resets scanned every child's stat for nothing). An error other
// than having no children at all answers true: the scan decides.
func anyZombieChild() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	switch {
	case err == unix.ECHILD:
		return false
	case err != nil:
		return true
	}
	return info.Signo == int32(unix.SIGCHLD)
}

// reapLoop reaps orphans on every SIGCHLD (debounced) and on a slow timer
// until ctx ends.
func reapLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGCHLD)
	defer signal.Stop(sig)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			// Let a burst of exits settle before scanning /proc.
			t := time.NewTimer(5 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			ReapOrphans()
		case <-tick.C:
			ReapOrphans()
		}
	}
}
