// Package procfs reads what harnessd needs of /proc: a process's stat line,
// its initial environment, its children, its PID namespace and inner pid,
// its cgroups, and the mount table. It only reads: it never signals, mounts
// or writes, and knows nothing of process trees, sandboxes or cgroup
// policy (those are process, process/sandbox and internal/linux/cgroups).
package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

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

func pidPath(pid int, file string) string { return "/proc/" + strconv.Itoa(pid) + "/" + file }

// ReadStat reads /proc/<pid>/stat; ok is false when the process is gone (or
// the file cannot be parsed).
func ReadStat(pid int) (Stat, bool) {
	b, err := os.ReadFile(pidPath(pid, "stat"))
	if err != nil {
		return Stat{}, false
	}
	return ParseStat(pid, b)
}

// ParseStat parses the text of /proc/<pid>/stat. The command name may
// contain spaces and parentheses, so parsing starts after the last ')'.
func ParseStat(pid int, b []byte) (Stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Stat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 4 || len(f[0]) != 1 {
		return Stat{}, false
	}
	st := Stat{PID: pid, State: f[0][0]}
	var err error
	if st.PPID, err = strconv.Atoi(string(f[1])); err != nil {
		return Stat{}, false
	}
	if st.PGID, err = strconv.Atoi(string(f[2])); err != nil {
		return Stat{}, false
	}
	if st.SID, err = strconv.Atoi(string(f[3])); err != nil {
		return Stat{}, false
	}
	if len(f) > 19 {
		st.StartTicks, _ = strconv.ParseUint(string(f[19]), 10, 64)
	}
	return st, true
}

// Ended reports whether the process pid that started at startTicks is gone:
// no such pid, a zombie, or the pid now names a younger process.
func Ended(pid int, startTicks uint64) bool {
	st, ok := ReadStat(pid)
	return !ok || st.StartTicks != startTicks || st.Dead()
}

// Pids returns the pids currently in /proc.
func Pids() []int {
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

// Scan returns the stat of every process for which keep returns true.
func Scan(keep func(Stat) bool) []Stat {
	var out []Stat
	for _, pid := range Pids() {
		if st, ok := ReadStat(pid); ok && keep(st) {
			out = append(out, st)
		}
	}
	return out
}

// EnvironContains reports whether the initial environment of pid holds the
// exact entry kv ("NAME=value").
func EnvironContains(pid int, kv string) bool {
	b, err := os.ReadFile(pidPath(pid, "environ"))
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

// ChildPids returns the pids of this process's children, read from each
// thread's children list; it falls back to a /proc scan when that file is
// missing (kernels without CONFIG_PROC_CHILDREN).
func ChildPids() []int {
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
		pids = append(pids, fieldsInts(b)...)
	}
	return pids
}

func scanChildren() []int {
	self := os.Getpid()
	var pids []int
	for _, st := range Scan(func(s Stat) bool { return s.PPID == self }) {
		pids = append(pids, st.PID)
	}
	return pids
}

// fieldsInts parses the whitespace-separated decimal numbers of b, skipping
// anything else.
func fieldsInts(b []byte) []int {
	var out []int
	for _, f := range bytes.Fields(b) {
		if n, err := strconv.Atoi(string(f)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Ints reads a file of whitespace-separated decimal numbers (a cgroup's
// cgroup.procs, a task's children); a missing file is an empty list.
func Ints(path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return fieldsInts(b)
}

// clockTicks is USER_HZ, the unit of /proc start times (100 on every Linux
// architecture Go supports).
const clockTicks = 100

// StartTime converts a /proc start time (clock ticks after boot) to wall
// time, using the boot time from /proc/stat.
func StartTime(ticks uint64) (time.Time, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			return time.Unix(sec, 0).Add(time.Duration(ticks) * time.Second / clockTicks), true
		}
	}
	return time.Time{}, false
}

// PIDNamespace names pid's PID namespace as /proc/<pid>/ns/pid does
// ("pid:[4026532…]"), empty when the process is gone.
func PIDNamespace(pid int) string {
	l, _ := os.Readlink(pidPath(pid, "ns/pid"))
	return l
}

// PidsInNamespace lists the host pids of the processes whose PID
// namespace is ns (as PIDNamespace names it).
func PidsInNamespace(ns string) []int {
	if ns == "" {
		return nil
	}
	var out []int
	for _, pid := range Pids() {
		if PIDNamespace(pid) == ns {
			out = append(out, pid)
		}
	}
	return out
}

// PidfdPid returns the pid, in the caller's PID namespace, of the process
// the caller's descriptor pidfd refers to: an error for a process that
// has ended or has no pid in the caller's namespace. It asks the pidfd
// itself (PIDFD_GET_INFO, one ioctl) and reads its fdinfo's Pid (an open,
// a read and a close of a /proc file) only on a kernel without that
// (before 6.13).
func PidfdPid(pidfd int) (int, error) {
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID}
	err := unix.IoctlPidfdInfo(pidfd, &info)
	switch {
	case err == nil && info.Mask&unix.PIDFD_INFO_PID != 0 && info.Pid > 0:
		return int(info.Pid), nil
	case errors.Is(err, unix.ESRCH):
		return 0, fmt.Errorf("pidfd %d: no process in this PID namespace: %w", pidfd, err)
	case errors.Is(err, unix.EBADF):
		return 0, fmt.Errorf("descriptor %d: %w", pidfd, err)
	}
	return pidfdInfoPid(pidfd)
}

// pidfdInfoPid is PidfdPid from the pidfd's fdinfo.
func pidfdInfoPid(pidfd int) (int, error) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || pid <= 0 {
				return 0, fmt.Errorf("pidfd %d: no process in this PID namespace (Pid %q)", pidfd, strings.TrimSpace(v))
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("descriptor %d is not a pidfd", pidfd)
}

// InnerPid returns the pid inside its namespace of host pid (the last
// NSpid of /proc/PID/status), 0 when unknown.
func InnerPid(pid int) int {
	b, err := os.ReadFile(pidPath(pid, "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				n, _ := strconv.Atoi(f[len(f)-1])
				return n
			}
		}
	}
	return 0
}

// CgroupEntry is one line of /proc/<pid>/cgroup.
type CgroupEntry struct {
	// Hierarchy is the hierarchy id; 0 with no controllers is cgroup v2.
	Hierarchy int
	// Controllers are the v1 controllers bound to the hierarchy (a named
	// hierarchy appears as "name=systemd").
	Controllers []string
	// Path is the cgroup's path relative to the hierarchy's root.
	Path string
}

// V2 reports whether the entry is the unified (v2) hierarchy's.
func (e CgroupEntry) V2() bool { return e.Hierarchy == 0 && len(e.Controllers) == 0 }

// Cgroups reads /proc/<pid>/cgroup (pid 0: this process).
func Cgroups(pid int) ([]CgroupEntry, error) {
	p := "/proc/self/cgroup"
	if pid != 0 {
		p = pidPath(pid, "cgroup")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return ParseCgroups(b), nil
}

// ParseCgroups parses the text of /proc/<pid>/cgroup.
func ParseCgroups(b []byte) []CgroupEntry {
	var out []CgroupEntry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		id, err := strconv.Atoi(parts[0])
		if err != nil {
			continue
		}
		e := CgroupEntry{Hierarchy: id, Path: parts[2]}
		if parts[1] != "" {
			e.Controllers = strings.Split(parts[1], ",")
		}
		out = append(out, e)
	}
	return out
}

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	// Root is the path of the mounted directory within its file system
	// (for a cgroup mount: the cgroup shown as the mount's root).
	Root string
	// Point is where it is mounted.
	Point string
	// FSType is the file system type ("cgroup2", "tmpfs", ...).
	FSType string
	// Source is the mount source ("tmpfs", "/dev/sda1", ...).
	Source string
	// SuperOptions are the per-super-block options (for a v1 cgroup
	// mount: its controllers among them).
	SuperOptions []string
}

// Mounts reads /proc/self/mountinfo.
func Mounts() ([]Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if m, ok := ParseMountinfoLine(sc.Text()); ok {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read /proc/self/mountinfo: %w", err)
	}
	return out, nil
}

// ParseMountinfoLine parses one line of mountinfo (proc(5)): the fields
// before " - " give the root and mount point, those after it the type,
// source and super options.
func ParseMountinfoLine(line string) (Mount, bool) {
	pre, post, ok := strings.Cut(line, " - ")
	if !ok {
		return Mount{}, false
	}
	fields, pf := strings.Fields(pre), strings.Fields(post)
	if len(fields) < 5 || len(pf) < 1 {
		return Mount{}, false
	}
	m := Mount{Root: UnescapeMountPath(fields[3]), Point: UnescapeMountPath(fields[4]), FSType: pf[0]}
	if len(pf) > 1 {
		m.Source = UnescapeMountPath(pf[1])
	}
	if len(pf) > 2 {
		m.SuperOptions = strings.Split(pf[2], ",")
	}
	return m, true
}

// UnescapeMountPath undoes the octal escapes (\040 for space) of mountinfo.
func UnescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
