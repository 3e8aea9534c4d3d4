package process

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/internal/linux/procfs"
)

// trackInterval is how often the supervisor records the members of every
// live tree (and, with cgroup leaves, which of them have left their leaf).
const trackInterval = time.Second

// members remembered per tree: pid -> start time (so a reused pid is never
// mistaken for a member).
type memberSet struct {
	mu   sync.Mutex
	pids map[int]uint64
}

func (m *memberSet) add(pid int, start uint64) {
	m.mu.Lock()
	if m.pids == nil {
		m.pids = map[int]uint64{}
	}
	m.pids[pid] = start
	m.mu.Unlock()
}

func (m *memberSet) snapshot() map[int]uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int]uint64, len(m.pids))
	for k, v := range m.pids {
		out[k] = v
	}
	return out
}

func (m *memberSet) replace(pids map[int]uint64) {
	m.mu.Lock()
	m.pids = pids
	m.mu.Unlock()
}

func (m *memberSet) empty() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pids) == 0
}

// trackLoop records tree members until ctx ends, then closes done.
func (s *Supervisor) trackLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(trackInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.recordMembers()
		}
	}
}

// launchedTrees returns the live trees whose leader has started.
func (s *Supervisor) launchedTrees() []*Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	procs := make([]*Process, 0, len(s.live))
	for p := range s.live {
		// A tree still starting has no pid to go by; a launched tree (a
		// sandbox) is bounded by its own PID namespace.
		if p.hasLeader() && p.tree == nil {
			procs = append(procs, p)
		}
	}
	return procs
}

// procIndex is one scan of /proc: every live process by pid, and the
// children of each pid.
type procIndex struct {
	byPid map[int]procfs.Stat
	kids  map[int][]int
}

func scanIndex() procIndex {
	all := procfs.Scan(func(st procfs.Stat) bool { return !st.Dead() })
	ix := procIndex{byPid: make(map[int]procfs.Stat, len(all)), kids: make(map[int][]int, len(all))}
	for _, st := range all {
		ix.byPid[st.PID] = st
		ix.kids[st.PPID] = append(ix.kids[st.PPID], st.PID)
	}
	return ix
}

// memberPids returns the live members of p's tree in ix, by ancestry: its
// leader, its process group or session, the pids of seeds (its cgroup
// leaf's processes), the members recorded earlier that are still alive
// (same start time), and every descendant of those. The environment is
// not consulted: a child that clears it is still found.
func (p *Process) memberPids(ix procIndex, seeds []int) map[int]bool {
	in := map[int]bool{}
	var queue []int
	push := func(pid int) {
		if _, ok := ix.byPid[pid]; ok && !in[pid] {
			in[pid] = true
			queue = append(queue, pid)
		}
	}
	push(p.pid)
	for _, st := range ix.byPid {
		if st.PGID == p.pid || st.SID == p.pid {
			push(st.PID)
		}
	}
	for _, pid := range seeds {
		push(pid)
	}
	for pid, start := range p.recorded.snapshot() {
		if st, ok := ix.byPid[pid]; ok && st.StartTicks == start {
			push(pid)
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range ix.kids[pid] {
			push(c)
		}
	}
	return in
}

// recordMembers updates each live tree's member set. A tree with a cgroup
// leaf is read from its leaf (recordLeaf: no /proc scan); the others from
// one scan of /proc, by ancestry (memberPids).
func (s *Supervisor) recordMembers() {
	procs := s.launchedTrees()
	if len(procs) == 0 {
		s.escapees.Store(0)
		return
	}
	var ix procIndex
	scanned := false
	escapees := 0
	for _, p := range procs {
		if p.leaf != nil && s.cgMount.Point != "" {
			escapees += s.recordLeaf(p)
			continue
		}
		if !scanned {
			ix, scanned = scanIndex(), true
		}
		for pid := range p.memberPids(ix, nil) {
			p.recorded.add(pid, ix.byPid[pid].StartTicks)
		}
	}
	s.escapees.Store(int64(escapees))
}

// recordLeaf sets p's members to the processes in its leaf (and cgroups
// below it) plus the members recorded before that are alive but no longer
// there; those of them outside the daemon's cgroup directory are p's
// escapees (the peer check by cgroup cannot see them; Stop sweeps them).
// It returns how many escapees p has.
func (s *Supervisor) recordLeaf(p *Process) int {
	known := p.recorded.snapshot()
	next := make(map[int]uint64, len(known))
	for _, pid := range p.leaf.ProcsBelow() {
		if start, ok := known[pid]; ok {
			next[pid] = start
		} else if st, ok := procfs.ReadStat(pid); ok {
			next[pid] = st.StartTicks
		}
	}
	escaped := map[int]uint64{}
	for pid, start := range known {
		if _, ok := next[pid]; ok {
			continue
		}
		if st, ok := procfs.ReadStat(pid); !ok || st.StartTicks != start || st.Dead() {
			continue // gone
		}
		next[pid] = start
		if !s.inDaemonCgroup(pid) {
			escaped[pid] = start
		}
	}
	p.recorded.replace(next)
	p.escaped.replace(escaped)
	return len(escaped)
}

// inDaemonCgroup reports whether pid's cgroup v2 is this daemon's directory
// or lies below it. An unreadable /proc/PID/cgroup (the process is gone)
// counts as inside: it holds nothing.
func (s *Supervisor) inDaemonCgroup(pid int) bool {
	entries, err := procfs.Cgroups(pid)
	if err != nil {
		return true
	}
	for _, e := range entries {
		if e.V2() {
			dir := s.cgMount.Dir(e.Path)
			return dir == s.cg.Parent() || strings.HasPrefix(dir, s.cg.Parent()+"/")
		}
	}
	return false
}
