package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harnessd/harnessd/internal/linux/cgroups"
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

// cgroupSet is a sandbox's cgroup: one v2 directory, or one directory per
// v1 controller.
type cgroupSet struct {
	version string
	dirs    map[string]string // controller ("" for v2) -> directory
}

func (l Limits) cgroup() cgroups.Limits {
	return cgroups.Limits{MemoryBytes: l.MemoryBytes, Pids: l.Pids, CPU: l.CPU}
}

// newCgroupSet makes the sandbox's cgroup for limits: v2 when parent (or
// the daemon's own v2 cgroup) offers every controller the limits need,
// else v1 (a hybrid host's v2 "unified" mount offers none).
func newCgroupSet(name, parent string, l Limits) (*cgroupSet, error) {
	layout, err := cgroups.Find()
	if err != nil {
		return nil, fmt.Errorf("read cgroup mounts: %w", err)
	}
	own := cgroups.Own()
	needed := l.cgroup().Controllers()
	var v2err error
	if layout.V2.Point != "" || parent != "" {
		if parent == "" {
			parent = layout.V2.Dir(own[""])
		}
		if v2err = cgroups.Enable(parent, needed); v2err == nil {
			d := filepath.Join(parent, name)
			if err := os.Mkdir(d, 0o755); err != nil {
				return nil, fmt.Errorf("create cgroup %s: %w", d, err)
			}
			return &cgroupSet{version: CgroupV2, dirs: map[string]string{"": d}}, nil
		}
	}
	var missing []string
	for _, c := range needed {
		if _, ok := layout.V1[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		if v2err == nil {
			v2err = cgroups.ErrNoV2
		}
		return nil, fmt.Errorf("no cgroup for the limits: v2: %w; v1: no %s hierarchy", v2err, strings.Join(missing, ", "))
	}
	cs := &cgroupSet{version: CgroupV1, dirs: map[string]string{}}
	for _, c := range needed {
		d := filepath.Join(layout.V1[c].Dir(own[c]), name)
		if err := os.Mkdir(d, 0o755); err != nil {
			cs.remove()
			return nil, fmt.Errorf("create cgroup %s (v2: %v): %w", d, v2err, err)
		}
		cs.dirs[c] = d
	}
	return cs, nil
}

// apply writes the limits in kernel units.
func (cs *cgroupSet) apply(l Limits) error {
	if cs.version == CgroupV2 {
		return l.cgroup().ApplyV2(cs.dirs[""])
	}
	return l.cgroup().ApplyV1(cs.dirs)
}

// add moves pid (the init, before it forks anything) into every directory.
func (cs *cgroupSet) add(pid int) error {
	for _, d := range cs.dirs {
		if err := cgroups.Write(d, "cgroup.procs", fmt.Sprint(pid)); err != nil {
			return err
		}
	}
	return nil
}

// counts returns the cgroup's cumulative limit events.
func (cs *cgroupSet) counts() cgroups.Events {
	switch {
	case cs == nil:
		return cgroups.Events{}
	case cs.version == CgroupV2:
		return cgroups.EventsV2(cs.dirs[""])
	}
	return cgroups.EventsV1(cs.dirs)
}

// limitHit names the limit the tree ran into since base was taken, empty
// when none: the memory limit when the OOM killer killed in the cgroup,
// the pids limit when a fork was refused.
func (cs *cgroupSet) limitHit(base cgroups.Events) string {
	now := cs.counts()
	switch {
	case now.OOMKills > base.OOMKills:
		return LimitMemory
	case now.PidsMax > base.PidsMax:
		return LimitPids
	}
	return ""
}

// empty reports whether no process is left in any directory.
func (cs *cgroupSet) empty() bool {
	for _, d := range cs.dirs {
		if !cgroups.Empty(d) {
			return false
		}
	}
	return true
}

// remove deletes the directories once empty, waiting up to a second for the
// kernel to let go of exited tasks.
func (cs *cgroupSet) remove() error {
	var errs []error
	for c, d := range cs.dirs {
		if err := cgroups.Remove(d, time.Second); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(cs.dirs, c)
	}
	return errors.Join(errs...)
}
