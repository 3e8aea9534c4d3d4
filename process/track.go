package process

import (
	"context"
	"sync"
	"time"
)

// trackInterval is how often, without a cgroup, the supervisor records the
// members of every live tree.
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

// trackLoop records tree members until ctx ends.
func (s *Supervisor) trackLoop(ctx context.Context) {
	defer close(s.tracked)
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

// recordMembers adds to each live tree's member set every process that
// descends from its leader, belongs to its group or session, or descends
// from a member seen before — from one scan of /proc.
func (s *Supervisor) recordMembers() {
	s.mu.Lock()
	procs := make([]*Process, 0, len(s.live))
	for p := range s.live {
		if p.hasLeader() { // a tree still starting has no pid to go by
			procs = append(procs, p)
		}
	}
	s.mu.Unlock()
	if len(procs) == 0 {
		return
	}
	all := scanProcs(func(st procStat) bool { return !st.zombie() })
	byPid := make(map[int]procStat, len(all))
	kids := make(map[int][]int, len(all))
	for _, st := range all {
		byPid[st.pid] = st
		kids[st.ppid] = append(kids[st.ppid], st.pid)
	}
	for _, p := range procs {
		known := p.recorded.snapshot()
		in := map[int]bool{}
		var queue []int
		push := func(pid int) {
			if !in[pid] {
				in[pid] = true
				queue = append(queue, pid)
			}
		}
		if st, ok := byPid[p.pid]; ok {
			push(st.pid)
		}
		for _, st := range all {
			if st.pgrp == p.pid || st.sid == p.pid {
				push(st.pid)
			}
		}
		for pid, start := range known {
			if st, ok := byPid[pid]; ok && st.start == start {
				push(pid)
			}
		}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			for _, c := range kids[pid] {
				push(c)
			}
		}
		for pid := range in {
			p.recorded.add(pid, byPid[pid].start)
		}
	}
}
