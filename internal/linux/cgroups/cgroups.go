// Package cgroups finds the cgroup hierarchies of this host (v2, v1, or the
// hybrid of both: v1 controllers beside a v2 "unified" mount) and reads and
// writes cgroup directories: make, enable controllers, set the memory, pids
// and CPU limits in either version's files, read the limit events, list and
// kill the processes (cgroup.kill), remove a directory and what was made
// below it. It is the one cgroup reader of process (a v2 leaf per process
// tree) and process/sandbox (a sandbox's limits).
//
// It owns no policy: which directory a caller makes, what it names it,
// which it may kill and when, are the caller's. It never signals a process
// itself (Kill writes cgroup.kill of the directory it is given) and never
// talks to systemd: the daemon runs with a delegated subtree, or as root in
// its own cgroup, and makes plain directories there.
package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/internal/linux/procfs"
	"golang.org/x/sys/unix"
)

// Version names a cgroup version.
type Version string

// Cgroup versions.
const (
	V2 Version = "v2" // one directory in the unified hierarchy
	V1 Version = "v1" // one directory in each controller's hierarchy
)

// Mount is one hierarchy's mount: where it is, and which cgroup its root is
// (not "/" when a container's cgroup namespace-less view shows its own
// cgroup as the mount's root).
type Mount struct {
	Point, Root string
}

// Dir returns the directory of cgroup path (as /proc/PID/cgroup names it)
// under the mount, minding the mount's root.
func (m Mount) Dir(path string) string {
	if r, ok := strings.CutPrefix(path, m.Root); ok && m.Root != "/" {
		path = r
	}
	return filepath.Join(m.Point, path)
}

// Layout is the host's cgroup mounts as this process sees them.
type Layout struct {
	// V2 is the unified hierarchy's mount (Point empty when none): on a
	// hybrid host it is the "unified" mount beside the v1 controllers.
	V2 Mount
	// V1 maps each v1 controller to its hierarchy's mount.
	V1 map[string]Mount
}

// Find reads the layout from /proc/self/mountinfo: the first cgroup2
// mount, and every v1 controller's mount.
func Find() (Layout, error) {
	mounts, err := procfs.Mounts()
	if err != nil {
		return Layout{}, err
	}
	return layoutOf(mounts), nil
}

func layoutOf(mounts []procfs.Mount) Layout {
	l := Layout{V1: map[string]Mount{}}
	for _, m := range mounts {
		switch m.FSType {
		case "cgroup2":
			if l.V2.Point == "" {
				l.V2 = Mount{Point: m.Point, Root: m.Root}
			}
		case "cgroup":
			for _, opt := range m.SuperOptions {
				if controllerOption(opt) {
					l.V1[opt] = Mount{Point: m.Point, Root: m.Root}
				}
			}
		}
	}
	return l
}

// controllerOption reports whether a v1 mount's super option names a
// controller (rather than rw, a name=, a release agent, ...).
func controllerOption(opt string) bool {
	switch opt {
	case "rw", "ro", "noprefix", "clone_children", "xattr", "cpuset_v2_mode", "favordynmods":
		return false
	}
	return !strings.Contains(opt, "=")
}

// ErrNoV2 says no cgroup2 file system is mounted.
var ErrNoV2 = errors.New("no cgroup2 filesystem mounted")

// Own maps each hierarchy this process is in to its cgroup path: "" for
// v2, otherwise each v1 controller (from /proc/self/cgroup). A process
// whose file cannot be read is taken to be at "/" of v2.
func Own() map[string]string {
	own := map[string]string{}
	entries, err := procfs.Cgroups(0)
	if err != nil {
		own[""] = "/"
		return own
	}
	for _, e := range entries {
		if e.V2() {
			own[""] = e.Path
			continue
		}
		for _, c := range e.Controllers {
			own[c] = e.Path
		}
	}
	return own
}

// V2Path returns pid's v2 cgroup path (0: this process), false when it has
// none or is gone.
func V2Path(pid int) (string, bool) {
	entries, err := procfs.Cgroups(pid)
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		if e.V2() {
			return e.Path, true
		}
	}
	return "", false
}

// OwnV2 returns the v2 mount, this process's v2 cgroup path and that
// cgroup's directory.
func OwnV2() (mount Mount, own, dir string, err error) {
	l, err := Find()
	if err != nil {
		return Mount{}, "", "", err
	}
	if l.V2.Point == "" {
		return Mount{}, "", "", ErrNoV2
	}
	own, ok := V2Path(0)
	if !ok {
		own = "/"
	}
	return l.V2, own, l.V2.Dir(own), nil
}

// Controllers lists a v2 directory's cgroup.controllers.
func Controllers(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("%s is not a cgroup v2 directory: %w", dir, err)
	}
	return strings.Fields(string(b)), nil
}

// Enable makes each of controllers available to parent's children: it
// checks that parent offers them and writes parent's cgroup.subtree_control
// for those not yet enabled.
func Enable(parent string, controllers []string) error {
	have, err := Controllers(parent)
	if err != nil {
		return err
	}
	for _, c := range controllers {
		if !slices.Contains(have, c) {
			return fmt.Errorf("%s offers no %s controller (controllers: %q)", parent, c, strings.Join(have, " "))
		}
	}
	sub, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	on := strings.Fields(string(sub))
	for _, c := range controllers {
		if !slices.Contains(on, c) {
			if err := Write(parent, "cgroup.subtree_control", "+"+c); err != nil {
				return fmt.Errorf("enable %s: %w", c, err)
			}
		}
	}
	return nil
}

// Write writes value to dir/file.
func Write(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("write %s to %s: %w", value, filepath.Join(dir, file), err)
	}
	return nil
}

// Keyed reads the "key value" lines of dir/file (memory.events, ...); a
// missing file is an empty map.
func Keyed(dir, file string) map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}

// Int reads a file of one number (0 when missing or not a number).
func Int(dir, file string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// Procs lists the pids in dir (its cgroup.procs).
func Procs(dir string) []int { return procfs.Ints(filepath.Join(dir, "cgroup.procs")) }

// ProcsBelow lists the pids in dir and in every cgroup below it.
func ProcsBelow(dir string) []int {
	pids := Procs(dir)
	for _, sub := range children(dir) {
		pids = append(pids, ProcsBelow(sub)...)
	}
	return pids
}

// Empty reports whether no process is in dir itself (v1 or v2).
func Empty(dir string) bool { return len(Procs(dir)) == 0 }

// Populated reports whether any process is in the v2 directory dir or
// below it (cgroup.events); false once dir is gone.
func Populated(dir string) bool {
	return Keyed(dir, "cgroup.events")["populated"] == 1
}

// Kill ends every process in the v2 directory dir and below it at once
// (cgroup.kill, Linux 5.14+).
func Kill(dir string) error { return Write(dir, "cgroup.kill", "1") }

// children lists the directories in dir (the cgroups made below it).
func children(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// Children lists the cgroups directly below dir.
func Children(dir string) []string { return children(dir) }

// RemoveBelow removes the (empty) cgroups below dir, deepest first.
func RemoveBelow(dir string) {
	for _, sub := range children(dir) {
		RemoveBelow(sub)
		os.Remove(sub)
	}
}

// Remove deletes dir and every cgroup below it, retrying for up to wait
// while the kernel still counts them busy (exited tasks not yet let go
// of). A directory already gone is no error.
func Remove(dir string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		RemoveBelow(dir)
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(time.Millisecond)
	}
}
