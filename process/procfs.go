package process

import "github.com/harnessd/harnessd/internal/linux/procfs"

// Stat is what this package reads of a process's /proc/<pid>/stat
// (internal/linux/procfs reads it).
type Stat = procfs.Stat

// ReadStat reads /proc/<pid>/stat; ok is false when the process is gone (or
// the file cannot be parsed).
func ReadStat(pid int) (st Stat, ok bool) { return procfs.ReadStat(pid) }

// Ended reports whether the process pid that started at startTicks is gone:
// no such pid, a zombie, or the pid now names a younger process.
func Ended(pid int, startTicks uint64) bool { return procfs.Ended(pid, startTicks) }
