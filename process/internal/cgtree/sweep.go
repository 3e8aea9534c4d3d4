package cgtree

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/procfs"
)

// daemonDirName matches the directories daemons make under a cgroup root:
// harnessd-<pid>-<instance> (a Supervisor's) and harnessd-probe-<pid>-<instance>
// (ProbeCgroup's scratch directory).
var daemonDirName = regexp.MustCompile(`^harnessd-(?:probe-)?([0-9]+)-[0-9a-f]{16}$`)

// sweepMinAge is how old an unlocked directory must be before it is taken
// for a leftover: it covers the moment between a starting daemon's mkdir and
// its lock, also for a daemon in another PID namespace.
const sweepMinAge = 10 * time.Second

// lockDir opens dir and takes an exclusive flock on it without blocking.
// The lock lives as long as the returned descriptor, and dies with the
// process however it ends (SIGKILL included): a held lock is how a
// Supervisor's cgroup directory says that its daemon is alive. flock is on
// the directory's inode, so it is seen across PID and mount namespaces.
func lockDir(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", dir, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("lock %s: %w", dir, err)
	}
	return fd, nil
}

// leftover reports whether the daemon directory dir (made by daemon pid)
// belongs to a daemon that is gone. A live Supervisor holds its directory's
// flock for as long as it runs, so a locked directory is always kept. An
// unlocked one is a leftover when it is not fresh (sweepMinAge) and its pid
// cannot be its maker: no live process has that pid here, or the one that
// has it started after the directory was made (the pid was reused). A pid
// that is alive and older than the directory keeps it, whatever it is: it
// may be a daemon that does not lock (an older build), and a leak is better
// than killing a live daemon's trees. On true the lock is held through fd,
// for the caller to release after the removal.
func leftover(dir string, pid int) (fd int, gone bool) {
	fd, err := lockDir(dir)
	if err != nil {
		return -1, false // locked by a live daemon, or unreadable: keep
	}
	fi, err := os.Stat(dir)
	if err != nil || time.Since(fi.ModTime()) < sweepMinAge || mayBeMaker(pid, fi.ModTime()) {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// startSlack absorbs the second resolution of the boot time.
const startSlack = 2 * time.Second

// mayBeMaker reports whether the live process pid (if any) could have made a
// directory last modified at mtime: it is alive and started before then.
func mayBeMaker(pid int, mtime time.Time) bool {
	st, ok := procfs.ReadStat(pid)
	if !ok || st.Dead() {
		return false
	}
	started, ok := procfs.StartTime(st.StartTicks)
	if !ok {
		return true // cannot tell: keep
	}
	return !started.After(mtime.Add(startSlack))
}

// sweepCgroups removes, under root, the directories of daemons that are
// gone, except keep, this Supervisor's own. With kill, every process still
// in them is killed first (a SIGKILLed daemon's trees may have outlived
// it); without, a directory that still holds processes is left alone and
// logged. It logs and returns what it removed.
func sweepCgroups(root, keep string, kill bool, log *slog.Logger) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		log.Warn("cannot sweep cgroups of gone daemons", "root", root, "err", err)
		return nil
	}
	var removed []string
	for _, e := range entries {
		m := daemonDirName.FindStringSubmatch(e.Name())
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || m == nil || dir == keep {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		fd, gone := leftover(dir, pid)
		if !gone {
			continue
		}
		if !kill {
			if n := daemonDirProcs(dir); n > 0 {
				unix.Close(fd)
				log.Info("left the cgroup of a gone daemon alone: it still holds processes this daemon did not start", "path", dir, "pid", pid, "processes", n)
				continue
			}
		}
		killed := removeDaemonDir(dir)
		unix.Close(fd)
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			log.Warn("leftover cgroup of a gone daemon not removed", "path", dir, "pid", pid, "err", err)
			continue
		}
		log.Info("removed cgroup of a daemon that is gone", "path", dir, "pid", pid, "processes_killed", killed)
		removed = append(removed, dir)
	}
	return removed
}

// daemonDirProcs counts the processes in dir's leaves and the cgroups below them.
func daemonDirProcs(dir string) int {
	n := 0
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			n += len((&Leaf{Path: filepath.Join(dir, e.Name()), FD: -1}).ProcsBelow())
		}
	}
	return n
}

// removeDaemonDir kills every process below dir and removes its leaves; it
// returns how many processes were found there.
func removeDaemonDir(dir string) int {
	killed := daemonDirProcs(dir)
	removeCgroupTree(dir)
	return killed
}
