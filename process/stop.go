package process

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/procfs"
)

// Stop ends the whole tree. It sends SIGTERM to every member (and SIGHUP in
// PTY mode, since interactive shells ignore SIGTERM), waits up to grace for
// them to exit, then kills what is left (cgroup.kill where available, else
// SIGKILL to the group or session), sweeps for members that escaped the group
// (setsid, double fork), reaps every orphan and releases pipes, terminal and
// cgroup. A grace of zero kills at once.
//
// Stop is idempotent and safe to call from several goroutines: every caller
// waits for the same stop. If ctx ends first Stop returns ctx's error while
// the stop runs on to completion in the background.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	p.stopOnce.Do(func() { go p.stop(grace) })
	select {
	case <-p.stopped:
		return p.stopErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stopped is closed once Stop has finished.
func (p *Process) Stopped() <-chan struct{} { return p.stopped }

func (p *Process) stop(grace time.Duration) {
	defer close(p.stopped)
	defer p.sup.untrack(p)
	start := time.Now()

	if grace > 0 && !p.allDead() {
		p.signalTree(unix.SIGTERM)
		p.waitDead(grace)
	}
	killed := false
	if !p.allDead() {
		killed = true
		p.killTree()
		p.waitDead(DefaultKillWait)
	}
	escapees := 0
	if p.tree == nil && (p.leaf == nil || p.leaf.Populated() || !p.escaped.empty()) {
		// cgroup.kill leaves nothing behind in the leaf; without a cgroup
		// (or if it somehow failed, or a member moved itself out of the
		// leaf) hunt for escapees. A launched tree's PID namespace is its
		// own kill.
		escapees = p.sweep()
	}

	// The leader is normally reaped by now; don't wait forever for a
	// process the kernel cannot kill (uninterruptible sleep).
	t := time.NewTimer(DefaultKillWait)
	select {
	case <-p.exited:
	case <-t.C:
		p.log.Error("process leader did not exit after SIGKILL")
	}
	t.Stop()
	ReapOrphans()

	p.releaseIO()
	if p.leaf != nil {
		if err := p.leaf.Remove(time.Second); err != nil {
			p.log.Warn("cgroup not removed", "err", err)
		}
	}
	p.log.Debug("process tree stopped", "elapsed", time.Since(start), "escalated", killed,
		"escapees", escapees, "mode", p.KillMode(), "status", p.exit.String())
}

// releaseIO lets the readers finish and closes every parent-side file.
func (p *Process) releaseIO() {
	close(p.closing)
	p.ioMu.Lock()
	p.ioDone = true
	p.ioMu.Unlock()
	if p.stdin != nil {
		p.writeMu <- struct{}{}
		p.stdin.Close()
		<-p.writeMu
	}
	done := make(chan struct{})
	go func() {
		p.readers.Wait()
		close(done)
	}()
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		// A pipe writer survived (outside our reach) or the terminal never
		// hung up. Closing pipes unblocks pipe readers; a blocked terminal
		// read cannot be interrupted, which is logged as a leak.
		p.log.Warn("output readers still busy after stop; closing")
	}
	if p.stdout != nil {
		p.stdout.Close()
	}
	if p.stderr != nil {
		p.stderr.Close()
	}
	if p.ptmx != nil {
		p.ptmx.Close()
	}
	select {
	case <-done:
	case <-time.After(time.Second):
		p.log.Error("output reader goroutine leaked after stop")
	}
}

// signalTree sends sig to every member of the tree.
func (p *Process) signalTree(sig unix.Signal) {
	if !p.hasLeader() {
		return
	}
	if p.tree != nil {
		p.tree.Signal(sig)
		return
	}
	if p.leaf != nil {
		p.leaf.Signal(sig)
	}
	if p.ptmx != nil {
		// A session may hold several process groups (shell job control).
		for _, pg := range p.sessionGroups() {
			unix.Kill(-pg, unix.SIGHUP)
			unix.Kill(-pg, sig)
			unix.Kill(-pg, unix.SIGCONT)
		}
		return
	}
	unix.Kill(-p.pid, sig)
}

// killTree sends SIGKILL to every member, through the cgroup when there is one.
func (p *Process) killTree() {
	if !p.hasLeader() {
		return
	}
	if p.tree != nil {
		p.tree.Signal(unix.SIGKILL)
		return
	}
	if p.leaf != nil {
		if err := p.leaf.Kill(); err != nil {
			p.log.Warn("cgroup.kill failed", "err", err)
		}
	}
	if p.ptmx != nil {
		for _, pg := range p.sessionGroups() {
			unix.Kill(-pg, unix.SIGKILL)
		}
	}
	unix.Kill(-p.pid, unix.SIGKILL)
}

// hasLeader reports whether the tree has a started leader to signal by group:
// a pid of 0 or 1 would make kill(-pid) hit the caller's own process group
// or every process, and a sweep by group/session 0 would take processes
// whose group lies outside this PID namespace for members.
func (p *Process) hasLeader() bool { return p.launched.Load() && p.pid > 1 }

// sessionGroups lists the process groups of the tree's session.
func (p *Process) sessionGroups() []int {
	if !p.hasLeader() {
		return nil
	}
	seen := map[int]bool{p.pid: true}
	groups := []int{p.pid}
	for _, st := range procfs.Scan(func(s procfs.Stat) bool { return s.SID == p.pid }) {
		if !seen[st.PGID] {
			seen[st.PGID] = true
			groups = append(groups, st.PGID)
		}
	}
	return groups
}

// allDead reports whether the leader has exited and no member is left.
func (p *Process) allDead() bool {
	if !p.hasLeader() {
		return true // nothing was ever started
	}
	if p.Alive() {
		return false
	}
	if p.tree != nil {
		return true // the tree is gone once the launched root is
	}
	if p.leaf != nil {
		return !p.leaf.Populated()
	}
	if p.ptmx == nil && unix.Kill(-p.pid, 0) == unix.ESRCH {
		return true
	}
	return len(p.members()) == 0
}

// members lists the live (non-zombie) processes in the tree's group or session.
func (p *Process) members() []procfs.Stat {
	return procfs.Scan(func(s procfs.Stat) bool {
		if s.Dead() {
			return false
		}
		if p.ptmx != nil {
			return s.SID == p.pid
		}
		return s.PGID == p.pid
	})
}

// waitDead polls until allDead or d has passed, backing off from 250µs to 10ms.
func (p *Process) waitDead(d time.Duration) bool {
	deadline := time.Now().Add(d)
	step := 250 * time.Microsecond
	for {
		if p.allDead() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		sleep := min(step, time.Until(deadline)+50*time.Microsecond)
		t := time.NewTimer(sleep)
		select {
		case <-p.exited:
		case <-t.C:
		}
		t.Stop()
		step = min(step*2, 10*time.Millisecond)
	}
}

// sweep finds and kills processes of the tree that escaped its group or
// session: descendants of any member, and orphans (adopted by the daemon as
// subreaper, or by PID 1) still carrying the tree's environment marker. With a
// cgroup the marker is not needed: cgroup.kill has ended every member. It
// returns how many it killed.
func (p *Process) sweep() int {
	if !p.hasLeader() {
		return 0
	}
	marker := TreeEnvVar + "=" + p.treeID
	self := os.Getpid()
	// An orphan is re-parented to the nearest subreaper: harnessd, PID 1, or
	// some other subreaper above harnessd (a supervisor, a shell tool). Any
	// process started since the tree's leader that carries the tree's marker
	// is a member, wherever it now hangs; the start time keeps the environ
	// reads to processes younger than the tree.
	orphan := func(st procfs.Stat) bool {
		return p.leaf == nil && st.StartTicks >= p.startTicks && procfs.EnvironContains(st.PID, marker)
	}
	total := 0
	killed := map[int]uint64{}
	for pass := 0; pass < 50; pass++ {
		all := procfs.Scan(func(procfs.Stat) bool { return true })
		kids := make(map[int][]int, len(all))
		byPid := make(map[int]procfs.Stat, len(all))
		in := make(map[int]bool)
		for _, st := range all {
			byPid[st.PID] = st
			kids[st.PPID] = append(kids[st.PPID], st.PID)
			if st.Dead() || st.PID == self {
				continue
			}
			if st.PGID == p.pid || st.SID == p.pid || orphan(st) {
				in[st.PID] = true
			}
		}
		if p.leaf != nil && p.leaf.DaemonMade() {
			for _, pid := range p.leaf.Procs() {
				in[pid] = true
			}
		}
		// Members recorded earlier that detached and scrubbed their
		// environment: the pid must still have the same start time.
		for pid, start := range p.recorded.snapshot() {
			if st, ok := byPid[pid]; ok && st.StartTicks == start && !st.Dead() && pid != self {
				in[pid] = true
			}
		}
		// Close over descendants.
		queue := make([]int, 0, len(in))
		for pid := range in {
			queue = append(queue, pid)
		}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			for _, c := range kids[pid] {
				if !in[c] {
					in[c] = true
					queue = append(queue, c)
				}
			}
		}
		var victims []procfs.Stat
		for _, st := range all {
			if in[st.PID] && !st.Dead() && st.PID != self {
				victims = append(victims, st)
			}
		}
		if len(victims) == 0 {
			// A killed process stops looking like a member (its environment
			// is unreadable once it starts to exit) before it is dead: wait
			// for every victim to be gone, so Stop returns only then.
			waitGone(killed, DefaultKillWait)
			return total
		}
		for _, st := range victims {
			unix.Kill(st.PID, unix.SIGKILL)
			killed[st.PID] = st.StartTicks
		}
		total += len(victims)
		time.Sleep(time.Duration(pass+1) * time.Millisecond)
		ReapOrphans()
	}
	p.log.Error("process tree members survived 50 kill sweeps")
	return total
}

// waitGone waits up to d until none of the processes (pid -> start time) is
// alive: gone from /proc, a zombie, or its pid taken by another process.
func waitGone(procs map[int]uint64, d time.Duration) {
	deadline := time.Now().Add(d)
	step := 250 * time.Microsecond
	for pid, start := range procs {
		for {
			st, ok := procfs.ReadStat(pid)
			if !ok || st.Dead() || st.StartTicks != start {
				break
			}
			if time.Now().After(deadline) {
				return
			}
			time.Sleep(step)
			step = min(step*2, 10*time.Millisecond)
		}
	}
	ReapOrphans()
}

// Signal sends sig to every member of the tree — the process group, or in
// PTY mode every process group of the session — as long as any is left.
// It fails with ErrStopped once Stop has finished.
func (p *Process) Signal(sig unix.Signal) error {
	select {
	case <-p.stopped:
		return ErrStopped
	default:
	}
	if !p.hasLeader() {
		return ErrStopped
	}
	if p.tree != nil {
		select {
		case <-p.tree.Done():
			return nil
		default:
		}
		return p.tree.Signal(sig)
	}
	if p.ptmx != nil {
		for _, pg := range p.sessionGroups() {
			unix.Kill(-pg, sig)
		}
		return nil
	}
	// The group id stays reserved while any member lives, even after the
	// leader exited, so signalling it cannot hit an unrelated group.
	if err := unix.Kill(-p.pid, sig); err != nil && err != unix.ESRCH {
		return err
	}
	return nil
}
