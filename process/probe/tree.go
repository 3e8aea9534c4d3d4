package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/process"
)

// procs names the probe processes to watch: name -> pid and start time.
type procs map[string]process.Stat

// waitEnded polls until every process has ended or d has passed, and returns
// the ones still alive.
func (ps procs) waitEnded(ctx context.Context, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		alive := ps.alive()
		if len(alive) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return alive
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

func (ps procs) alive() []string {
	var alive []string
	for name, st := range ps {
		if !process.Ended(st.PID, st.StartTicks) {
			alive = append(alive, fmt.Sprintf("%s (pid %d)", name, st.PID))
		}
	}
	return alive
}

// killSurvivors SIGKILLs the probe processes still alive (so that a failed
// probe leaves nothing behind) and reaps the ones that were our children.
func (ps procs) killSurvivors() {
	for _, st := range ps {
		if !process.Ended(st.PID, st.StartTicks) {
			unix.Kill(st.PID, unix.SIGKILL)
		}
	}
	process.ReapOrphans()
}

// childSpec is the Spec of a probe child running mode.
func childSpec(self, name, mode string) process.Spec {
	return process.Spec{
		Name:   name,
		Path:   self,
		Args:   []string{ChildCommand, mode},
		Env:    process.DefaultEnviron(nil),
		Logger: slog.New(slog.DiscardHandler),
	}
}

// treeReport is what the tree probe child prints: the pids of its group
// member, its setsid escapee (parent alive) and its orphan (parent gone).
type treeReport struct {
	Member  int `json:"member"`
	Escapee int `json:"escapee"`
	Orphan  int `json:"orphan"`
}

// treeFindings are the items the tree attack settles; a zero Item is not
// settled by it.
type treeFindings struct {
	groups, subreaper, cgroup, kill Item
	killMode                        string
}

// failedTree is the finding of a tree probe that could not run: every item
// it settles failed, for the same reason.
func failedTree(detail string) treeFindings {
	f := Item{Status: StatusFailed, Detail: detail}
	return treeFindings{groups: f, subreaper: f, cgroup: f, kill: f}
}

// treeFacts is what the tree attack observed, before and after the stop.
type treeFacts struct {
	mech        process.Mechanisms
	killMode    string   // the probe tree's, as Process.KillMode says
	inGroup     bool     // the group member was in the leader's process group
	escaped     bool     // escapee and orphan had sessions of their own
	adopted     bool     // the orphan was re-parented to this process
	orphanPPID  int      // where the orphan was re-parented
	memberEnded bool     // the group member was gone after the stop
	alive       []string // probe processes alive after the stop
}

// treeVerdict turns what the tree attack observed into findings.
func treeVerdict(f treeFacts) treeFindings {
	tf := treeFindings{killMode: f.killMode}
	switch {
	case !f.inGroup:
		tf.groups = failed("the leader's child was not in its process group")
	case f.memberEnded:
		tf.groups = Item{Status: StatusVerified, Detail: "a child in the tree's process group ended with it"}
	default:
		tf.groups = failed("a child in the tree's process group survived the group kill")
	}

	switch {
	case f.mech.Subreaper && f.adopted:
		tf.subreaper = Item{Status: StatusVerified, Detail: "an orphan was re-parented to harnessd"}
	case f.mech.Subreaper:
		tf.subreaper = failed("enabled, but an orphan was re-parented to pid %d", f.orphanPPID)
	}

	switch {
	case !f.mech.Cgroup:
	case f.killMode != "cgroup":
		tf.cgroup = failed("%s exists, but the probe tree could not be started in a leaf (CLONE_INTO_CGROUP refused?)", f.mech.CgroupPath)
	case len(f.alive) == 0:
		tf.cgroup = Item{Status: StatusVerified, Detail: f.mech.CgroupPath + ": cgroup.kill ended the probe tree"}
	default:
		tf.cgroup = failed("%s: survivors after cgroup.kill", f.mech.CgroupPath)
	}

	switch {
	case len(f.alive) > 0:
		tf.kill = failed("%s kill left %s alive", f.killMode, strings.Join(f.alive, ", "))
	case !f.escaped:
		tf.kill = failed("the probe's escapees did not leave the tree's session; nothing was proven")
	default:
		tf.kill = Item{Status: StatusVerified, Detail: f.killMode + ": leader, group member, setsid escapee and orphan all ended by a stop"}
	}
	return tf
}

// waitLine waits for the stdout line of p that starts with prefix.
func waitLine(ctx context.Context, p *process.Process, prefix string) ([]byte, error) {
	var line []byte
	_, err := p.WaitReady(ctx, func(b []byte) bool {
		if bytes.HasPrefix(b, []byte(prefix)) {
			line = append([]byte(nil), b...)
			return true
		}
		return false
	})
	return line, err
}

// probeTree attacks the live configuration: it starts a throwaway tree
// through sup — a leader with a child in its process group, a setsid escapee
// and an orphan (a setsid sleeper whose parent exited) — stops it as harnessd
// stops a harness, and checks that every one of them is gone.
func probeTree(ctx context.Context, sup *process.Supervisor, self string) treeFindings {
	p, err := sup.Start(childSpec(self, "check-tree", "tree"))
	if err != nil {
		return failedTree(fmt.Sprintf("start a probe tree: %v", err))
	}
	defer p.Stop(context.Background(), 0)
	line, err := waitLine(ctx, p, `{"member"`)
	if err != nil {
		return failedTree(fmt.Sprintf("probe tree did not report: %v", err))
	}
	var tr treeReport
	if json.Unmarshal(line, &tr) != nil || tr.Member <= 0 || tr.Escapee <= 0 || tr.Orphan <= 0 {
		return failedTree(fmt.Sprintf("probe tree reported %q", line))
	}
	ps := procs{}
	for name, pid := range map[string]int{"leader": p.Pid(), "group member": tr.Member, "setsid escapee": tr.Escapee, "orphan": tr.Orphan} {
		st, ok := process.ReadStat(pid)
		if !ok {
			return failedTree(fmt.Sprintf("probe tree's %s (pid %d) vanished before the kill", name, pid))
		}
		ps[name] = st
	}
	defer ps.killSurvivors()

	f := treeFacts{
		mech:       sup.Mechanisms(),
		killMode:   p.KillMode(),
		inGroup:    ps["group member"].PGID == p.Pid(),
		escaped:    ps["setsid escapee"].SID == tr.Escapee && ps["orphan"].SID == tr.Orphan,
		adopted:    ps["orphan"].PPID == os.Getpid(),
		orphanPPID: ps["orphan"].PPID,
	}
	if err := p.Stop(ctx, probeGrace); err != nil {
		return failedTree(fmt.Sprintf("stop the probe tree: %v", err))
	}
	process.ReapOrphans()
	f.alive = ps.waitEnded(ctx, endedWait)
	member := ps["group member"]
	f.memberEnded = process.Ended(member.PID, member.StartTicks)
	return treeVerdict(f)
}
