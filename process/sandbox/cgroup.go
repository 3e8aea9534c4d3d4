package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Cgroup versions a sandbox's limits use.
const (
	CgroupNone = ""   // no limits asked for
	CgroupV2   = "v2" // one directory in the unified hierarchy
	CgroupV1   = "v1" // one directory in each of the memory, pids and cpu hierarchies
)

// Limit names (Exit.Limit).
const (
	LimitMemory = "memory"
	LimitPids   = "pids"
)

// limitControllers are the controllers the limits need.
var limitControllers = []string{"memory", "pids", "cpu"}

// cgroupSet is a sandbox's cgroup: one v2 directory, or one directory per
// v1 controller.
type cgroupSet struct {
	version string
	dirs    map[string]string // controller ("" for v2) -> directory
}

// cgroupMounts lists the cgroup mounts: v2's mount point and each v1
// controller's, with the mount's root.
type cgroupMounts struct {
	v2, v2Root string
	v1         map[string][2]string // controller -> mount point, mount root
}

func readCgroupMounts() (cgroupMounts, error) {
	cm := cgroupMounts{v1: map[string][2]string{}}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return cm, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, pf := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(pf) < 3 {
			continue
		}
		switch pf[0] {
		case "cgroup2":
			if cm.v2 == "" {
				cm.v2, cm.v2Root = fields[4], fields[3]
			}
		case "cgroup":
			for _, opt := range strings.Split(pf[2], ",") {
				for _, c := range limitControllers {
					if opt == c {
						cm.v1[c] = [2]string{fields[4], fields[3]}
					}
				}
			}
		}
	}
	return cm, sc.Err()
}

// ownCgroups maps each hierarchy of /proc/self/cgroup ("" for v2, else a
// controller) to this process's path in it.
func ownCgroups() map[string]string {
	own := map[string]string{}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return own
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own
}

// under joins a cgroup path to its mount, minding the mount's root.
func under(mount, root, path string) string {
	if r, ok := strings.CutPrefix(path, root); ok && root != "/" {
		path = r
	}
	return filepath.Join(mount, path)
}

// newCgroupSet makes the sandbox's cgroup for limits: v2 when parent (or
// the daemon's own v2 cgroup) offers every controller the limits need,
// else v1.
func newCgroupSet(name, parent string, l Limits) (*cgroupSet, error) {
	cm, err := readCgroupMounts()
	if err != nil {
		return nil, fmt.Errorf("read cgroup mounts: %w", err)
	}
	own := ownCgroups()
	needed := neededControllers(l)
	var v2err error
	if cm.v2 != "" || parent != "" {
		if parent == "" {
			parent = under(cm.v2, cm.v2Root, own[""])
		}
		cs, err := newV2(name, parent, needed)
		if err == nil {
			return cs, nil
		}
		v2err = err
	}
	var missing []string
	for _, c := range needed {
		if _, ok := cm.v1[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		if v2err == nil {
			v2err = errors.New("no cgroup v2 mounted")
		}
		return nil, fmt.Errorf("no cgroup for the limits: v2: %w; v1: no %s hierarchy", v2err, strings.Join(missing, ", "))
	}
	cs := &cgroupSet{version: CgroupV1, dirs: map[string]string{}}
	for _, c := range needed {
		m := cm.v1[c]
		d := filepath.Join(under(m[0], m[1], own[c]), name)
		if err := os.Mkdir(d, 0o755); err != nil {
			cs.remove()
			return nil, fmt.Errorf("create cgroup %s (v2: %v): %w", d, v2err, err)
		}
		cs.dirs[c] = d
	}
	return cs, nil
}

func neededControllers(l Limits) []string {
	var n []string
	if l.MemoryBytes > 0 {
		n = append(n, "memory")
	}
	if l.Pids > 0 {
		n = append(n, "pids")
	}
	if l.CPU > 0 {
		n = append(n, "cpu")
	}
	return n
}

// newV2 makes a v2 directory below parent with the needed controllers
// enabled (writing parent's cgroup.subtree_control when they are not yet).
func newV2(name, parent string, needed []string) (*cgroupSet, error) {
	b, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("%s is not a cgroup v2 directory: %w", parent, err)
	}
	have := strings.Fields(string(b))
	for _, c := range needed {
		if !contains(have, c) {
			return nil, fmt.Errorf("%s offers no %s controller (controllers: %q)", parent, c, strings.Join(have, " "))
		}
	}
	sub, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	for _, c := range needed {
		if !contains(strings.Fields(string(sub)), c) {
			if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
				return nil, fmt.Errorf("enable %s in %s: %w", c, parent, err)
			}
		}
	}
	d := filepath.Join(parent, name)
	if err := os.Mkdir(d, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", d, err)
	}
	return &cgroupSet{version: CgroupV2, dirs: map[string]string{"": d}}, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func writeFile(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("write %s to %s: %w", value, filepath.Join(dir, file), err)
	}
	return nil
}

// apply writes the limits in kernel units.
func (cs *cgroupSet) apply(l Limits) error {
	const period = 100000
	if cs.version == CgroupV2 {
		d := cs.dirs[""]
		if l.MemoryBytes > 0 {
			if err := writeFile(d, "memory.max", strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(d, "memory.swap.max")); err == nil {
				if err := writeFile(d, "memory.swap.max", "0"); err != nil {
					return err
				}
			}
		}
		if l.Pids > 0 {
			if err := writeFile(d, "pids.max", strconv.Itoa(l.Pids)); err != nil {
				return err
			}
		}
		if l.CPU > 0 {
			quota := max(int64(l.CPU*period), 1000)
			if err := writeFile(d, "cpu.max", fmt.Sprintf("%d %d", quota, period)); err != nil {
				return err
			}
		}
		return nil
	}
	if d := cs.dirs["memory"]; d != "" {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if err := writeFile(d, "memory.limit_in_bytes", v); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(d, "memory.memsw.limit_in_bytes")); err == nil {
			if err := writeFile(d, "memory.memsw.limit_in_bytes", v); err != nil {
				return err
			}
		}
	}
	if d := cs.dirs["pids"]; d != "" {
		if err := writeFile(d, "pids.max", strconv.Itoa(l.Pids)); err != nil {
			return err
		}
	}
	if d := cs.dirs["cpu"]; d != "" {
		quota := max(int64(l.CPU*period), 1000)
		if err := writeFile(d, "cpu.cfs_period_us", strconv.Itoa(period)); err != nil {
			return err
		}
		if err := writeFile(d, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)); err != nil {
			return err
		}
	}
	return nil
}

// add moves pid (the init, before it forks anything) into every directory.
func (cs *cgroupSet) add(pid int) error {
	for _, d := range cs.dirs {
		if err := writeFile(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// keyed reads "key value" lines of dir/file.
func keyed(dir, file string) map[string]int64 {
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

func single(dir, file string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// limitCounts are the cgroup's cumulative limit events: OOM kills (in v1,
// the limit reached while under OOM) and refused forks.
type limitCounts struct{ memory, pids int64 }

func (cs *cgroupSet) counts() limitCounts {
	var c limitCounts
	if cs == nil {
		return c
	}
	if cs.version == CgroupV2 {
		d := cs.dirs[""]
		c.memory = keyed(d, "memory.events")["oom_kill"]
		c.pids = keyed(d, "pids.events")["max"]
		return c
	}
	if d := cs.dirs["memory"]; d != "" {
		oc := keyed(d, "memory.oom_control")
		c.memory = oc["oom_kill"]
		if c.memory == 0 && oc["under_oom"] > 0 {
			c.memory = single(d, "memory.failcnt")
		}
	}
	if d := cs.dirs["pids"]; d != "" {
		c.pids = keyed(d, "pids.events")["max"]
	}
	return c
}

// limitHit names the limit the tree ran into since base was taken, empty
// when none: the memory limit when the OOM killer killed in the cgroup,
// the pids limit when a fork was refused.
func (cs *cgroupSet) limitHit(base limitCounts) string {
	now := cs.counts()
	switch {
	case now.memory > base.memory:
		return LimitMemory
	case now.pids > base.pids:
		return LimitPids
	}
	return ""
}

// empty reports whether no process is left in any directory.
func (cs *cgroupSet) empty() bool {
	for _, d := range cs.dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return false
		}
	}
	return true
}

// remove deletes the directories once empty, waiting up to a second for the
// kernel to let go of exited tasks.
func (cs *cgroupSet) remove() error {
	var errs []error
	deadline := time.Now().Add(time.Second)
	for c, d := range cs.dirs {
		for {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				delete(cs.dirs, c)
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}
