package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cgroupPrefix starts the name of every sandbox cgroup:
// harnessd-sandbox-<daemon pid>-<name>-<random>.
const cgroupPrefix = "harnessd-sandbox-"

// SweepCgroups removes the empty sandbox cgroups that daemons no longer
// running left beside this daemon's own cgroup in each hierarchy (a daemon
// killed with SIGKILL cannot remove its sandboxes' cgroups; their
// processes died with their PID namespaces). It only removes directories
// (rmdir fails on a cgroup that still has tasks), never signals, and
// skips a cgroup whose daemon pid is alive. It returns how many it
// removed.
func SweepCgroups() int {
	cm, err := readCgroupMounts()
	if err != nil {
		return 0
	}
	own := ownCgroups()
	var parents []string
	if cm.v2 != "" {
		parents = append(parents, under(cm.v2, cm.v2Root, own[""]))
	}
	for c, m := range cm.v1 {
		parents = append(parents, under(m[0], m[1], own[c]))
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
			if !ok || !e.IsDir() || pidAlive(pid) {
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
