package agent

import (
	"context"
	"fmt"
	"os"
)

func init() { attacks["fill"] = attackFill }

// attackFill: "fill PATH SIZE" — write SIZE bytes (64K, 16M) to PATH (made
// or truncated), 64 KiB at a time, and sync it: the disk fill of an
// unbounded workspace. Count is the bytes written (they stay, so the disk
// stays as full as they made it); OK when all of SIZE was written, else
// errno names what refused the write (ENOSPC at a quota).
func attackFill(_ context.Context, args []string) AttackResult {
	if r := needArgs(args, 2, "fill PATH SIZE"); r != nil {
		return *r
	}
	n, err := parseSize(args[1])
	if err != nil {
		return AttackResult{Errno: "EINVAL", Detail: err.Error()}
	}
	f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return failed(err, "create")
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i*7 + 1) // not zeros: nothing may store it sparsely
	}
	written := 0
	for written < n {
		m, err := f.Write(buf[:min(len(buf), n-written)])
		written += m
		if err != nil {
			r := failed(err, fmt.Sprintf("write after %d bytes", written))
			r.Count = written
			return r
		}
	}
	if err := f.Sync(); err != nil {
		r := failed(err, fmt.Sprintf("sync after %d bytes", written))
		r.Count = written
		return r
	}
	return AttackResult{OK: true, Count: written, Detail: fmt.Sprintf("wrote %d bytes", written)}
}
