package session

import (
	"fmt"
	"strings"

	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/wire"
)

// reachedLimits checks, as a turn ends, the bounds an episode can stand at
// and go on (its disk quota): each one reached gets a recoverable error
// event from the daemon, added to the turn before its end, and is named in
// the observation's limits_reached.
func (s *Session) reachedLimits(r *run) []string {
	out := s.fullMounts(r)
	if !r.ep.DiskFull() {
		return out
	}
	u, _ := r.ep.DiskUsage()
	msg := fmt.Sprintf("the episode's disk quota is full (%s, %s of the workspace, HOME and TMPDIR; %s free): the harness's writes fail with ENOSPC",
		wire.LimitDisk, units.ByteSize(s.env.DiskQuota()), units.ByteSize(u.Avail))
	ev := wire.New(wire.OriginDaemon, &wire.Error{Message: msg, Recoverable: true, Extra: wire.Extra{"limit": wire.LimitDisk}})
	s.events.Add(ev)
	r.ep.Log().Info("episode at its disk quota", "limit", wire.LimitDisk, "available_bytes", u.Avail, "free_inodes", u.FreeInodes)
	return append(out, wire.LimitDisk)
}

// fullMounts reports the sandbox's own tmpfs mounts that are full, each
// with a recoverable daemon error event naming it.
func (s *Session) fullMounts(r *run) []string {
	full := r.ep.FullMounts()
	for _, name := range full {
		msg := fmt.Sprintf("the sandbox's %s is full (a tmpfs sized from limits.memory): the harness's writes there fail with ENOSPC",
			strings.TrimPrefix(name, "sandbox:"))
		s.events.Add(wire.New(wire.OriginDaemon, &wire.Error{Message: msg, Recoverable: true, Extra: wire.Extra{"limit": name}}))
	}
	return full
}
