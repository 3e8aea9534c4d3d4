package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Limits are the resource bounds a directory can carry. Zero means no
// limit.
type Limits struct {
	// MemoryBytes bounds memory; swap is bounded to nothing more where the
	// host lets it be (v2 memory.swap.max 0, v1 memsw the same as memory).
	MemoryBytes int64
	// Pids bounds the tasks (processes and threads).
	Pids int
	// CPU is the quota in cores (1.5 = one and a half cores).
	CPU float64
}

// Controllers lists the controllers the limits need.
func (l Limits) Controllers() []string {
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

// cpuPeriod is the CFS period the CPU quota is set in (µs).
const cpuPeriod = 100000

func (l Limits) cpuQuota() int64 { return max(int64(l.CPU*cpuPeriod), 1000) }

// ApplyV2 writes the limits into the v2 directory dir.
func (l Limits) ApplyV2(dir string) error {
	if l.MemoryBytes > 0 {
		if err := Write(dir, "memory.max", strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return err
		}
		if exists(dir, "memory.swap.max") {
			if err := Write(dir, "memory.swap.max", "0"); err != nil {
				return err
			}
		}
	}
	if l.Pids > 0 {
		if err := Write(dir, "pids.max", strconv.Itoa(l.Pids)); err != nil {
			return err
		}
	}
	if l.CPU > 0 {
		if err := Write(dir, "cpu.max", fmt.Sprintf("%d %d", l.cpuQuota(), cpuPeriod)); err != nil {
			return err
		}
	}
	return nil
}

// ApplyV1 writes the limits into v1 directories, one per controller.
func (l Limits) ApplyV1(dirs map[string]string) error {
	if d := dirs["memory"]; d != "" && l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if err := Write(d, "memory.limit_in_bytes", v); err != nil {
			return err
		}
		if exists(d, "memory.memsw.limit_in_bytes") {
			if err := Write(d, "memory.memsw.limit_in_bytes", v); err != nil {
				return err
			}
		}
	}
	if d := dirs["pids"]; d != "" && l.Pids > 0 {
		if err := Write(d, "pids.max", strconv.Itoa(l.Pids)); err != nil {
			return err
		}
	}
	if d := dirs["cpu"]; d != "" && l.CPU > 0 {
		if err := Write(d, "cpu.cfs_period_us", strconv.Itoa(cpuPeriod)); err != nil {
			return err
		}
		if err := Write(d, "cpu.cfs_quota_us", strconv.FormatInt(l.cpuQuota(), 10)); err != nil {
			return err
		}
	}
	return nil
}

// Events are a cgroup's cumulative limit events.
type Events struct {
	// OOMKills counts the memory limit's OOM kills (in v1, the limit's
	// failures while under OOM when the kernel keeps no kill count).
	OOMKills int64
	// PidsMax counts the forks the pids limit refused.
	PidsMax int64
}

// EventsV2 reads the limit events of a v2 directory.
func EventsV2(dir string) Events {
	return Events{OOMKills: Keyed(dir, "memory.events")["oom_kill"], PidsMax: Keyed(dir, "pids.events")["max"]}
}

// EventsV1 reads the limit events of v1 directories, one per controller.
func EventsV1(dirs map[string]string) Events {
	var e Events
	if d := dirs["memory"]; d != "" {
		oc := Keyed(d, "memory.oom_control")
		e.OOMKills = oc["oom_kill"]
		if e.OOMKills == 0 && oc["under_oom"] > 0 {
			e.OOMKills = Int(d, "memory.failcnt")
		}
	}
	if d := dirs["pids"]; d != "" {
		e.PidsMax = Keyed(d, "pids.events")["max"]
	}
	return e
}

func exists(dir, file string) bool {
	_, err := os.Stat(filepath.Join(dir, file))
	return err == nil
}
