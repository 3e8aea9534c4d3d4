package process

import (
	"bytes"
	"os"
	"strconv"
)

// procStat is the part of /proc/<pid>/stat this package uses.
type procStat struct {
	pid, ppid, pgrp, sid int
	state                byte   // R, S, D, Z, T, ...
	start                uint64 // start time in clock ticks since boot; tells reused pids apart
}

func (s procStat) zombie() bool { return s.state == 'Z' || s.state == 'X' }

// readStat reads /proc/<pid>/stat.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(pid, b)
}

// parseStat parses the text of /proc/<pid>/stat. The command name may
// contain spaces and parentheses, so parsing starts after the last ')'.
func parseStat(pid int, b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 4 || len(f[0]) != 1 {
		return procStat{}, false
	}
	st := procStat{pid: pid, state: f[0][0]}
	var err error
	if st.ppid, err = strconv.Atoi(string(f[1])); err != nil {
		return procStat{}, false
	}
	if st.pgrp, err = strconv.Atoi(string(f[2])); err != nil {
		return procStat{}, false
	}
	if st.sid, err = strconv.Atoi(string(f[3])); err != nil {
		return procStat{}, false
	}
	if len(f) > 19 {
		st.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	}
	return st, true
}

// Stat is what this package reads of a process's /proc/<pid>/stat.
type Stat struct {
	PID, PPID int
	// PGID and SID are the process group and session.
	PGID, SID int
	// State is the one-letter state (R, S, D, Z, T, ...).
	State byte
	// StartTicks is the start time in clock ticks after boot; it tells a
	// reused pid apart from the process that had it before.
	StartTicks uint64
}

// Dead reports a zombie: the process has ended and only waits to be reaped.
func (s Stat) Dead() bool { return s.State == 'Z' || s.State == 'X' }

// ReadStat reads /proc/<pid>/stat; ok is false when the process is gone (or
// the file cannot be parsed).
func ReadStat(pid int) (st Stat, ok bool) {
	ps, ok := readStat(pid)
	if !ok {
		return Stat{}, false
	}
	return Stat{PID: ps.pid, PPID: ps.ppid, PGID: ps.pgrp, SID: ps.sid, State: ps.state, StartTicks: ps.start}, true
}

// Ended reports whether the process pid that started at startTicks is gone:
// no such pid, a zombie, or the pid now names a younger process.
func Ended(pid int, startTicks uint64) bool {
	st, ok := readStat(pid)
	return !ok || st.start != startTicks || st.zombie()
}

// listPids returns the pids currently in /proc.
func listPids() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// scanProcs returns the stat of every process for which keep returns true.
func scanProcs(keep func(procStat) bool) []procStat {
	var out []procStat
	for _, pid := range listPids() {
		if st, ok := readStat(pid); ok && keep(st) {
			out = append(out, st)
		}
	}
	return out
}

// environContains reports whether the initial environment of pid holds the
// exact entry kv ("NAME=value").
func environContains(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	needle := []byte(kv)
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		var entry []byte
		if i < 0 {
			entry, b = b, nil
		} else {
			entry, b = b[:i], b[i+1:]
		}
		if bytes.Equal(entry, needle) {
			return true
		}
	}
	return false
}

// childPids returns the pids of this process's children, read from each
// thread's children list; it falls back to a /proc scan when that file is
// missing (kernels without CONFIG_PROC_CHILDREN).
func childPids() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return scanChildren()
	}
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) {
				return scanChildren()
			}
			continue
		}
		for _, f := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(f)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func scanChildren() []int {
	self := os.Getpid()
	var pids []int
	for _, st := range scanProcs(func(s procStat) bool { return s.ppid == self }) {
		pids = append(pids, st.pid)
	}
	return pids
}
