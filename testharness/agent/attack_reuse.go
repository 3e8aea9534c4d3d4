package agent

import (
	"context"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// The attacks on a sandbox kept across episodes (issue 28): marks a
// tenant leaves on a directory itself, not in it.

func init() {
	attacks["stamp-dir"] = attackStampDir
	attacks["dir-times"] = attackDirTimes
}

// attackStampDir: "stamp-dir PATH SECONDS" — set PATH's access and
// modification times to SECONDS.123456789. OK when set.
func attackStampDir(_ context.Context, args []string) AttackResult {
	if r := needArgs(args, 2, "stamp-dir PATH SECONDS"); r != nil {
		return *r
	}
	secs, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		return AttackResult{Errno: "EINVAL", Detail: err.Error()}
	}
	ts := []unix.Timespec{{Sec: secs, Nsec: 123456789}, {Sec: secs, Nsec: 123456789}}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, args[0], ts, 0); err != nil {
		return failed(err, "utimensat "+args[0])
	}
	return AttackResult{OK: true, Detail: "stamped " + args[0]}
}

// attackDirTimes: "dir-times PATH" — PATH's modification time in seconds
// (Count) and both times (Detail). OK when PATH stats.
func attackDirTimes(_ context.Context, args []string) AttackResult {
	if r := needArgs(args, 1, "dir-times PATH"); r != nil {
		return *r
	}
	var st unix.Stat_t
	if err := unix.Stat(args[0], &st); err != nil {
		return failed(err, "stat "+args[0])
	}
	return AttackResult{OK: true, Count: int(st.Mtim.Sec),
		Detail: fmt.Sprintf("atime=%d.%09d mtime=%d.%09d", st.Atim.Sec, st.Atim.Nsec, st.Mtim.Sec, st.Mtim.Nsec)}
}
