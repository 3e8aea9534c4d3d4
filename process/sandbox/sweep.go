package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/internal/linux/cgroups"
)

// cgroupPrefix starts the name of every sandbox cgroup:
// harnessd-sandbox-<daemon pid>-<name>-<random>.
const cgroupPrefix = "harnessd-sandbox-"

// SweepCgroups removes the empty sandbox cgroups that daemons no longer
// running left beside this daemon's own cgroup in each hierarchy (a daemon
// killed with SIGKILL cannot remove its sandboxes' cgroups; their
// processes died with their PID namespaces). It only removes directories
// (rmdir fails on a cgroup that still has tasks), never signals, and
// skips a cgroup whose daemon pid is alive, and one made in the last
// sweepMinAge: a daemon in another PID namespace (a container's, a test's)
// cannot see this one's pid, and must not remove the empty cgroup a live
// sandbox has just made and not yet moved its init into. It returns how
// many it removed.
func SweepCgroups() int { return sweepCgroups(sweepMinAge) }

// sweepMinAge is how old an empty sandbox cgroup must be to be swept.
const sweepMinAge = 10 * time.Second

func sweepCgroups(minAge time.Duration) int {
	layout, err := cgroups.Find()
	if err != nil {
		return 0
	}
	own := cgroups.Own()
	var parents []string
	if layout.V2.Point != "" {
		parents = append(parents, layout.V2.Dir(own[""]))
	}
	for _, c := range (Limits{MemoryBytes: 1, Pids: 1, CPU: 1}).cgroup().Controllers() {
		if m, ok := layout.V1[c]; ok {
			parents = append(parents, m.Dir(own[c]))
		}
	}
	n := 0
	seen := map[string]bool{}
	for _, p := range parents {
		if seen[p] {
			continue
		}
		seen[p] = true
		ents, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, e := range ents {
			pid, ok := sandboxCgroupPid(e.Name())
			if !ok || !e.IsDir() || pidAlive(pid) || younger(e, minAge) {
				continue
			}
			if os.Remove(filepath.Join(p, e.Name())) == nil {
				n++
			}
		}
	}
	return n
}

// sandboxCgroupPid parses the daemon pid out of a sandbox cgroup's name.
func sandboxCgroupPid(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, cgroupPrefix)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(num)
	return pid, ok && err == nil && pid > 0
}

// pidAlive reports whether a process with pid exists (any process: a
// reused pid keeps the cgroup, which is the safe side).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// younger reports whether the directory e was made (or changed) less than
// age ago; one whose age cannot be read counts as young (kept).
func younger(e os.DirEntry, age time.Duration) bool {
	if age <= 0 {
		return false
	}
	fi, err := e.Info()
	return err != nil || time.Since(fi.ModTime()) < age
}
