package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/harnessd/harnessd/process"
)

// Statuses of one mechanism in harnessd check.
const (
	statusVerified  = "verified"  // exercised on this machine, and it worked
	statusAvailable = "available" // present, not exercised
	statusMissing   = "missing"   // absent or not permitted here
	statusFailed    = "failed"    // present, but exercising it showed that it does not work
	statusOff       = "off"       // disabled by configuration (--cgroup off, --subreaper off)
)

// Mechanism names, in report order. They are also the names --require takes.
const (
	mechProcessGroups = "process_groups"
	mechPdeathsig     = "pdeathsig"
	mechSubreaper     = "subreaper"
	mechCgroup        = "cgroup"
	mechKill          = "kill"
	mechPTY           = "pty"
	mechPID1          = "pid1"
	mechUserns        = "userns"
)

var mechanismNames = []string{mechProcessGroups, mechPdeathsig, mechSubreaper, mechCgroup, mechKill, mechPTY, mechPID1, mechUserns}

// mechanismHelp says what each mechanism is for (check -h and docs/deploy.md).
var mechanismHelp = map[string]string{
	mechProcessGroups: "each harness tree in its own process group (or session), killed as one",
	mechPdeathsig:     "direct children die with the daemon (PR_SET_PDEATHSIG), a last resort",
	mechSubreaper:     "orphans of a tree are re-parented to the daemon (PR_SET_CHILD_SUBREAPER), found and reaped",
	mechCgroup:        "a cgroup v2 leaf per tree; cgroup.kill ends everything in it, however it forked",
	mechKill:          "the live configuration ends a tree with a group member, a setsid escapee and an orphan",
	mechPTY:           "pseudo-terminals for interactive (TUI) harnesses",
	mechPID1:          "harnessd is PID 1 of its PID namespace: it reaps every orphan of the container",
	mechUserns:        "unprivileged user namespaces (not used by harnessd today; informs sandboxing options)",
}

// checkItem is the finding for one mechanism.
type checkItem struct {
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// met reports whether a requirement on the item is satisfied.
func (c checkItem) met() bool { return c.Status == statusVerified || c.Status == statusAvailable }

// Probe bounds.
const (
	probeTimeout   = 5 * time.Second
	treeTimeout    = 15 * time.Second // a tree kill may wait out DefaultKillWait
	probeChildLife = time.Minute      // every probe child ends on its own after this
	probeGrace     = 200 * time.Millisecond
	endedWait      = 2 * time.Second // how long a killed pid may take to disappear
)

// probeChildCommand is the hidden subcommand that probes run as their
// throwaway children (harnessd re-executes itself, so the probes need nothing
// else on the machine — not even a shell).
const probeChildCommand = "__probe"

func init() {
	register(probeChildCommand, "", runProbeChild)
}

// runProbe runs f with a deadline and turns a panic or an overrun into a
// failed item: probes never take check down and never hang it.
func runProbe(timeout time.Duration, f func(ctx context.Context) checkItem) checkItem {
	return probeWithin(timeout, f, func(detail string) checkItem {
		return checkItem{Status: statusFailed, Detail: detail}
	})
}

// probeWithin runs f under a deadline of timeout; a panic or an overrun
// becomes failed(detail). Every probe honours ctx, so its goroutine ends soon
// after the deadline; one that still does not is left to the process's exit
// after a further bound (check is a one-shot command).
func probeWithin[T any](timeout time.Duration, f func(ctx context.Context) T, failed func(detail string) T) T {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ch := make(chan T, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- failed(fmt.Sprintf("probe panicked: %v", r))
			}
		}()
		ch <- f(ctx)
	}()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
	}
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		return failed(fmt.Sprintf("probe timed out after %s", timeout))
	}
}

// pstat is what the probes read of /proc/<pid>/stat.
type pstat struct {
	ppid, pgrp, sid int
	state           byte
	start           uint64 // start time in clock ticks after boot: tells a reused pid apart
}

func readPstat(pid int) (pstat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return pstat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return pstat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 || len(f[0]) != 1 {
		return pstat{}, false
	}
	var st pstat
	st.state = f[0][0]
	st.ppid, _ = strconv.Atoi(string(f[1]))
	st.pgrp, _ = strconv.Atoi(string(f[2]))
	st.sid, _ = strconv.Atoi(string(f[3]))
	st.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return st, true
}

// ended reports whether the process pid that started at start is gone (or a
// zombie, which is dead and only waits to be reaped).
func ended(pid int, start uint64) bool {
	st, ok := readPstat(pid)
	return !ok || st.start != start || st.state == 'Z' || st.state == 'X'
}

// waitEnded polls until every pid has ended or d has passed, and returns the
// ones still alive.
func waitEnded(ctx context.Context, pids map[string]int, starts map[string]uint64, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		var alive []string
		for name, pid := range pids {
			if !ended(pid, starts[name]) {
				alive = append(alive, fmt.Sprintf("%s (pid %d)", name, pid))
			}
		}
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

// killSurvivors SIGKILLs the probe processes still alive (so that a failed
// probe leaves nothing behind) and reaps the ones that were our children.
func killSurvivors(pids map[string]int, starts map[string]uint64) {
	for name, pid := range pids {
		if !ended(pid, starts[name]) {
			unix.Kill(pid, unix.SIGKILL)
		}
	}
	process.ReapOrphans()
}

// probeSpec is the Spec of a probe child running mode.
func probeSpec(self, name, mode string) process.Spec {
	return process.Spec{
		Name:   name,
		Path:   self,
		Args:   []string{probeChildCommand, mode},
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

// treeFindings are the items the tree attack settles.
type treeFindings struct {
	groups, subreaper, cgroup, kill checkItem
	killMode                        string
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

// failedTree is the finding of a tree probe that could not run: every item
// it settles failed, for the same reason.
func failedTree(detail string) treeFindings {
	f := checkItem{Status: statusFailed, Detail: detail}
	return treeFindings{groups: f, subreaper: f, cgroup: f, kill: f}
}

// probeTree attacks the live configuration: it starts a throwaway tree
// through sup — a leader with a child in its process group, a setsid escapee
// and an orphan (a setsid sleeper whose parent exited) — stops it as harnessd
// stops a harness, and checks that every one of them is gone.
func probeTree(ctx context.Context, sup *process.Supervisor, self string) (tf treeFindings) {
	mech := sup.Mechanisms()
	fail := failedTree
	p, err := sup.Start(probeSpec(self, "check-tree", "tree"))
	if err != nil {
		return fail(fmt.Sprintf("start a probe tree: %v", err))
	}
	defer p.Stop(context.Background(), 0)
	line, err := waitLine(ctx, p, `{"member"`)
	if err != nil {
		return fail(fmt.Sprintf("probe tree did not report: %v", err))
	}
	var tr treeReport
	if json.Unmarshal(line, &tr) != nil || tr.Member <= 0 || tr.Escapee <= 0 || tr.Orphan <= 0 {
		return fail(fmt.Sprintf("probe tree reported %q", line))
	}
	pids := map[string]int{"leader": p.Pid(), "group member": tr.Member, "setsid escapee": tr.Escapee, "orphan": tr.Orphan}
	starts := map[string]uint64{}
	stats := map[string]pstat{}
	for name, pid := range pids {
		st, ok := readPstat(pid)
		if !ok {
			return fail(fmt.Sprintf("probe tree's %s (pid %d) vanished before the kill", name, pid))
		}
		starts[name], stats[name] = st.start, st
	}
	defer killSurvivors(pids, starts)

	tf.killMode = p.KillMode()
	inGroup := stats["group member"].pgrp == p.Pid()
	escaped := stats["setsid escapee"].sid == tr.Escapee && stats["orphan"].sid == tr.Orphan
	adopted := stats["orphan"].ppid == os.Getpid()

	if err := p.Stop(ctx, probeGrace); err != nil {
		return fail(fmt.Sprintf("stop the probe tree: %v", err))
	}
	process.ReapOrphans()
	alive := waitEnded(ctx, pids, starts, endedWait)

	switch {
	case !inGroup:
		tf.groups = checkItem{Status: statusFailed, Detail: "the leader's child was not in its process group"}
	case ended(tr.Member, starts["group member"]):
		tf.groups = checkItem{Status: statusVerified, Detail: "a child in the tree's process group ended with it"}
	default:
		tf.groups = checkItem{Status: statusFailed, Detail: "a child in the tree's process group survived the group kill"}
	}

	switch {
	case mech.Subreaper && adopted:
		tf.subreaper = checkItem{Status: statusVerified, Detail: "an orphan was re-parented to harnessd"}
	case mech.Subreaper:
		tf.subreaper = checkItem{Status: statusFailed, Detail: fmt.Sprintf("enabled, but an orphan was re-parented to pid %d", stats["orphan"].ppid)}
	}

	switch {
	case !mech.Cgroup:
	case tf.killMode != "cgroup":
		tf.cgroup = checkItem{Status: statusFailed, Detail: mech.CgroupPath + " exists, but the probe tree could not be started in a leaf (CLONE_INTO_CGROUP refused?)"}
	case len(alive) == 0:
		tf.cgroup = checkItem{Status: statusVerified, Detail: mech.CgroupPath + ": cgroup.kill ended the probe tree"}
	default:
		tf.cgroup = checkItem{Status: statusFailed, Detail: mech.CgroupPath + ": survivors after cgroup.kill"}
	}

	switch {
	case len(alive) > 0:
		tf.kill = checkItem{Status: statusFailed, Detail: fmt.Sprintf("%s kill left %s alive", tf.killMode, strings.Join(alive, ", "))}
	case !escaped:
		tf.kill = checkItem{Status: statusFailed, Detail: "the probe's escapees did not leave the tree's session; nothing was proven"}
	default:
		tf.kill = checkItem{Status: statusVerified, Detail: tf.killMode + ": leader, group member, setsid escapee and orphan all ended by a stop"}
	}
	return tf
}

// probePdeathsig starts a child that starts a grandchild with
// PR_SET_PDEATHSIG=SIGKILL and exits; the grandchild must die with it.
func probePdeathsig(ctx context.Context, sup *process.Supervisor, self string) checkItem {
	p, err := sup.Start(probeSpec(self, "check-pdeathsig", "pdeath"))
	if err != nil {
		return checkItem{Status: statusFailed, Detail: fmt.Sprintf("start: %v", err)}
	}
	defer p.Stop(context.Background(), 0)
	line, err := waitLine(ctx, p, `{"child"`)
	if err != nil {
		return checkItem{Status: statusFailed, Detail: fmt.Sprintf("probe child did not report: %v", err)}
	}
	var r struct {
		Child int `json:"child"`
	}
	if json.Unmarshal(line, &r) != nil || r.Child <= 0 {
		return checkItem{Status: statusFailed, Detail: fmt.Sprintf("probe child reported %q", line)}
	}
	st, ok := readPstat(r.Child)
	if !ok {
		// Already gone: its parent exited and the signal did its work.
		return checkItem{Status: statusVerified, Detail: "a child was killed when its parent exited"}
	}
	pids, starts := map[string]int{"child": r.Child}, map[string]uint64{"child": st.start}
	defer killSurvivors(pids, starts)
	if _, err := p.Wait(ctx); err != nil {
		return checkItem{Status: statusFailed, Detail: fmt.Sprintf("probe parent did not exit: %v", err)}
	}
	if alive := waitEnded(ctx, pids, starts, endedWait); len(alive) > 0 {
		return checkItem{Status: statusFailed, Detail: "a child with PR_SET_PDEATHSIG outlived its parent"}
	}
	return checkItem{Status: statusVerified, Detail: "a child was killed when its parent exited"}
}

// probePTY runs a child on a pseudo-terminal and checks that it sees one.
func probePTY(ctx context.Context, sup *process.Supervisor, self string) checkItem {
	if !sup.Mechanisms().PTY {
		return checkItem{Status: statusMissing, Detail: noteFor(sup.Mechanisms().Notes, "pty:")}
	}
	spec := probeSpec(self, "check-pty", "tty")
	spec.PTY = &process.PTY{}
	p, err := sup.Start(spec)
	if err != nil {
		return checkItem{Status: statusFailed, Detail: fmt.Sprintf("start on a pty: %v", err)}
	}
	defer p.Stop(context.Background(), 0)
	out, err := p.WaitReady(ctx, func(b []byte) bool { return bytes.Contains(b, []byte("tty=")) })
	if err != nil {
		return checkItem{Status: statusFailed, Detail: fmt.Sprintf("no output from a child on a pty: %v", err)}
	}
	if !bytes.Contains(bytes.Join(out, nil), []byte("tty=yes")) {
		return checkItem{Status: statusFailed, Detail: "a child on a pty did not see a terminal"}
	}
	return checkItem{Status: statusVerified, Detail: "a child on a pseudo-terminal saw a terminal"}
}

// probeUserns starts a child in a new user namespace.
func probeUserns(ctx context.Context, self string) checkItem {
	cmd := exec.CommandContext(ctx, self, probeChildCommand, "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		detail := fmt.Sprintf("cannot create a user namespace: %v", errors.Unwrap(err))
		for _, f := range []struct{ path, bad, say string }{
			{"/proc/sys/user/max_user_namespaces", "0", "user.max_user_namespaces is 0"},
			{"/proc/sys/kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone is 0"},
			{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor restricts unprivileged user namespaces"},
		} {
			if b, err := os.ReadFile(f.path); err == nil && strings.TrimSpace(string(b)) == f.bad {
				detail += "; " + f.say
			}
		}
		return checkItem{Status: statusMissing, Detail: detail}
	}
	// The exit status does not matter (as PID 1 the orphan reaper may even
	// collect it first): the clone succeeded.
	cmd.Wait()
	return checkItem{Status: statusVerified, Detail: "a child was started in a new user namespace"}
}

// pidInfo describes the PID namespace harnessd runs in.
type pidInfo struct {
	// PID is this process's pid in its own namespace.
	PID int `json:"pid"`
	// PID1 reports that this process is PID 1 (the orphan reaper is on).
	PID1 bool `json:"pid1"`
	// Namespace is the PID namespace ("pid:[4026531836]").
	Namespace string `json:"namespace,omitempty"`
	// NestedNamespace reports a PID namespace below the initial one (a
	// container's).
	NestedNamespace bool `json:"nested_namespace"`
	// Init is the command name of this namespace's PID 1.
	Init string `json:"init,omitempty"`
}

// initialPIDNamespace names the initial PID namespace, whose inode number
// the kernel fixes (PROC_PID_INIT_INO, 0xEFFFFFFC).
const initialPIDNamespace = "pid:[4026531836]"

func readPIDInfo() pidInfo {
	pi := pidInfo{PID: os.Getpid()}
	pi.PID1 = pi.PID == 1
	// The initial PID namespace has a fixed inode (PROC_PID_INIT_INO). NSpid
	// in /proc/self/status cannot tell: a container's own procfs lists only
	// the pids of its own namespace.
	if l, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		pi.Namespace = l
		pi.NestedNamespace = l != initialPIDNamespace
	}
	if b, err := os.ReadFile("/proc/1/comm"); err == nil {
		pi.Init = strings.TrimSpace(string(b))
	}
	return pi
}

// pid1Item: harnessd as PID 1 — this process, or the namespace's init when
// check runs beside a serving daemon (kubectl exec ... harnessd check).
func pid1Item(pi pidInfo) checkItem {
	where := "in the initial PID namespace"
	if pi.NestedNamespace {
		where = "in a nested PID namespace"
	}
	switch {
	case pi.PID1:
		return checkItem{Status: statusAvailable, Detail: "harnessd is PID 1 " + where + ": the orphan reaper is on"}
	case pi.Init == "harnessd":
		return checkItem{Status: statusAvailable, Detail: fmt.Sprintf("PID 1 %s is harnessd (this check runs as pid %d)", where, pi.PID)}
	default:
		return checkItem{Status: statusMissing, Detail: fmt.Sprintf("PID 1 %s is %q; harnessd runs as pid %d", where, pi.Init, pi.PID)}
	}
}

// noteFor returns the supervisor note with prefix, without it.
func noteFor(notes []string, prefix string) string {
	for _, n := range notes {
		if v, ok := strings.CutPrefix(n, prefix); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// runProbeChild is the hidden "__probe MODE" subcommand: the throwaway
// processes of harnessd check. Every one of them ends on its own after
// probeChildLife, so even a failed kill leaves nothing behind for long.
func runProbeChild(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "harnessd: internal probe child: want one mode")
		return exitUsage
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd probe:", err)
		return exitFailure
	}
	start := func(mode string, attr *syscall.SysProcAttr) (*exec.Cmd, error) {
		c := exec.Command(self, probeChildCommand, mode)
		c.SysProcAttr = attr
		return c, c.Start()
	}
	switch args[0] {
	case "true":
		return exitOK
	case "sleep":
		time.Sleep(probeChildLife)
		return exitOK
	case "tty":
		fmt.Printf("tty=%s\n", map[bool]string{true: "yes", false: "no"}[term.IsTerminal(0)])
		time.Sleep(probeChildLife)
		return exitOK
	case "detach":
		c, err := start("sleep", &syscall.SysProcAttr{Setsid: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, "harnessd probe:", err)
			return exitFailure
		}
		fmt.Println(c.Process.Pid)
		return exitOK
	case "pdeath":
		c, err := start("sleep", &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL})
		if err != nil {
			fmt.Fprintln(os.Stderr, "harnessd probe:", err)
			return exitFailure
		}
		fmt.Printf("{\"child\":%d}\n", c.Process.Pid)
		return exitOK
	case "tree":
		var r treeReport
		member, err := start("sleep", nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "harnessd probe:", err)
			return exitFailure
		}
		r.Member = member.Process.Pid
		escapee, err := start("sleep", &syscall.SysProcAttr{Setsid: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, "harnessd probe:", err)
			return exitFailure
		}
		r.Escapee = escapee.Process.Pid
		out, err := exec.Command(self, probeChildCommand, "detach").Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "harnessd probe: detach:", err)
			return exitFailure
		}
		if r.Orphan, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
			fmt.Fprintln(os.Stderr, "harnessd probe: detach said", strconv.Quote(string(out)))
			return exitFailure
		}
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		time.Sleep(probeChildLife)
		return exitOK
	}
	fmt.Fprintf(os.Stderr, "harnessd: internal probe child: unknown mode %q\n", args[0])
	return exitUsage
}
