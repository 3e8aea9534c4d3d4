package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/procfs"
	"github.com/harnessd/harnessd/internal/linux/session"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
)

// A sandboxed harness leads a session of its own, so that it shares no
// scheduling group (autogroup) with the daemon, and the daemon lightens
// that group (Run.Lighten) once the harness has started up: at the first
// write to its input (process.SettlingTree), not during its start, where
// the kernel has autogroups.
func TestHarnessLeadsASessionOfItsOwn(t *testing.T) {
	sb, p := supervised(t, process.Spec{}, "term")
	if r := nextLine(t, p); r.Value != "waiting" {
		t.Fatalf("agent said %+v", r)
	}
	pid := sb.HarnessPid()
	st, ok := procfs.ReadStat(pid)
	if pid == 0 || !ok {
		t.Fatalf("no harness on the host (pid %d)", pid)
	}
	mine, _ := unix.Getsid(0)
	if sid, err := unix.Getsid(pid); err != nil || sid != pid || st.PGID != pid {
		t.Errorf("the harness (host pid %d) is in session %d (%v), group %d: want its own, not the daemon's %d", pid, sid, err, st.PGID, mine)
	}
	own, err := os.ReadFile("/proc/self/autogroup")
	if err != nil {
		t.Logf("this kernel has no autogroup (%v): only the session is checked", err)
		return
	}
	group := func() (name, nice string) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/autogroup", pid))
		if err != nil {
			t.Fatal(err)
		}
		name, nice, _ = strings.Cut(strings.TrimSpace(string(b)), " ")
		return name, nice
	}
	name, nice := group()
	if name == autogroupName(own) {
		t.Errorf("the harness's scheduling group is the daemon's (%s)", name)
	}
	if nice != "nice 0" {
		t.Errorf("before its first input the harness's group is at %q, want nice 0 (it starts at full weight)", nice)
	}
	if err := p.WriteLine(context.Background(), []byte("turn 1")); err != nil {
		t.Fatal(err)
	}
	if _, nice := group(); nice != fmt.Sprintf("nice %d", session.HarnessNice) {
		t.Errorf("after its first input the harness's group is at %q, want nice %d (Run.Lighten; the test runs as root)", nice, session.HarnessNice)
	}
}

const ttyDaemonCommand = "__sandbox-test-ttydaemon"

// ttyDaemonReport is what runTTYDaemon prints: its own open of /dev/tty,
// a plain child's, and a sandboxed harness's.
type ttyDaemonReport struct {
	Daemon, Child, Harness result
	Error                  string
}

// runTTYDaemon stands in for a harnessd started from a terminal (the test
// makes the pty its controlling terminal): it opens /dev/tty itself, has a
// plain child try (the positive control: a process of its session reaches
// the operator's terminal), then a sandboxed harness.
func runTTYDaemon() int {
	var rep ttyDaemonReport
	defer func() { json.NewEncoder(os.Stdout).Encode(rep) }()
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	rep.Daemon = outcome(err)
	if err == nil {
		f.Close()
	}
	exe, _ := os.Executable()
	out, err := exec.Command(exe, agentCommand, "ctty").Output()
	if err != nil || json.Unmarshal(out, &rep.Child) != nil {
		rep.Error = fmt.Sprintf("plain child: %q %v", out, err)
		return 1
	}
	if rep.Harness, err = sandboxedRun(standInConfig("ttydaemon"), "ctty"); err != nil {
		rep.Error = err.Error()
		return 1
	}
	return 0
}

// A daemon started from a terminal: its sandboxed harness, in the daemon's
// session, cannot open that terminal (TIOCSTI, reading the operator's
// keys), while a plain child of the daemon can.
func TestHarnessCannotReachTheDaemonsTerminal(t *testing.T) {
	need(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		testbin.Missing(t, "no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	cmd := exec.Command(self(t), ttyDaemonCommand)
	cmd.Stdin, cmd.Stderr = tty, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	out, err := cmd.Output()
	tty.Close()
	var rep ttyDaemonReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("tty daemon said %q (%v, %v)", out, err, jerr)
	}
	if rep.Error != "" || err != nil {
		t.Fatalf("tty daemon: %s (%v)", rep.Error, err)
	}
	if !rep.Daemon.OK || !rep.Child.OK {
		t.Fatalf("positive control: the daemon (%+v) and its plain child (%+v) should open their terminal", rep.Daemon, rep.Child)
	}
	if rep.Harness.OK || !strings.Contains(rep.Harness.Errno, "ENXIO") {
		t.Fatalf("the sandboxed harness opened /dev/tty, or failed otherwise than having no terminal: %+v", rep.Harness)
	}
}

const autogroupDaemonCommand = "__sandbox-test-autogroupdaemon"

// autogroupReport is what runAutogroupDaemon prints: its own scheduling
// group's nice before, after a sandboxed harness and after a plain child
// each set a group to 19.
type autogroupReport struct {
	Before, AfterHarness, AfterChild string
	Harness, Child                   result
	Error                            string
}

// ownNice is the nice of the calling process's scheduling group.
func ownNice() string {
	b, err := os.ReadFile("/proc/self/autogroup")
	if err != nil {
		return "none: " + err.Error()
	}
	_, nice, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	return nice
}

// runAutogroupDaemon stands in for harnessd in a session of its own (so
// that the test's own scheduling group is never touched): a sandboxed
// harness (id map os.Args[2], the seccomp filter on) runs the agent with
// os.Args[3:], which sets a group to 19, then a plain child sets its own
// (the positive control: a process of the daemon's session lowers the
// daemon's).
func runAutogroupDaemon() int {
	rep := autogroupReport{Before: ownNice()}
	defer func() { json.NewEncoder(os.Stdout).Encode(rep) }()
	cfg := standInConfig("autogroupdaemon")
	cfg.IDs, cfg.Seccomp = sandbox.IDMode(os.Args[2]), true
	var err error
	if rep.Harness, err = sandboxedRun(cfg, os.Args[3:]...); err != nil {
		rep.Error = err.Error()
		return 1
	}
	rep.AfterHarness = ownNice()
	exe, _ := os.Executable()
	out, err := exec.Command(exe, agentCommand, "autogroup-nice").Output()
	if err != nil || json.Unmarshal(out, &rep.Child) != nil {
		rep.Error = fmt.Sprintf("plain child: %q %v", out, err)
		return 1
	}
	rep.AfterChild = ownNice()
	return 0
}

// autogroupStandIn runs runAutogroupDaemon in a session of its own, its
// harness with id map ids and agent arguments args, and returns its
// report.
func autogroupStandIn(t *testing.T, ids sandbox.IDMode, args ...string) autogroupReport {
	t.Helper()
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		testbin.Missing(t, "this kernel has no autogroup (%v): there is no shared scheduling group to lower", err)
	}
	cmd := exec.Command(self(t), append([]string{autogroupDaemonCommand, string(ids)}, args...)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.Output()
	var rep autogroupReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("autogroup daemon said %q (%v, %v)", out, err, jerr)
	}
	if rep.Error != "" || err != nil {
		t.Fatalf("autogroup daemon: %s (%v)", rep.Error, err)
	}
	return rep
}

// A sandboxed harness that lowers its scheduling group's weight lowers
// only its own: the daemon's stays at nice 0, while a plain child of the
// daemon's session (the positive control) lowers the daemon's. In the
// daemon's session the harness could starve it so.
func TestHarnessCannotLowerTheDaemonsSchedulingWeight(t *testing.T) {
	need(t)
	rep := autogroupStandIn(t, sandbox.IDAuto, "autogroup-nice")
	if !rep.Harness.OK {
		t.Fatalf("the harness could not set its own group's nice, so the attack did not run: %+v", rep.Harness)
	}
	if rep.Before != "nice 0" || rep.AfterHarness != "nice 0" {
		t.Errorf("the daemon's group went from %q to %q when the sandboxed harness set its own to 19", rep.Before, rep.AfterHarness)
	}
	if !rep.Child.OK || rep.AfterChild != "nice 19" {
		t.Errorf("positive control: a plain child (%+v) left the daemon's group at %q, want nice 19", rep.Child, rep.AfterChild)
	}
}

// A descriptor the daemon inherited without close-on-exec does not reach
// the sandboxed harness, while a plain child of the daemon gets it (the
// positive control).
func TestInheritedDescriptorsDoNotReachTheHarness(t *testing.T) {
	need(t)
	var p [2]int
	if err := unix.Pipe2(p[:], 0); err != nil { // no O_CLOEXEC: inherited by every child
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	var st unix.Stat_t
	if err := unix.Fstat(p[0], &st); err != nil {
		t.Fatal(err)
	}
	leaked := fmt.Sprintf("pipe:[%d]", st.Ino)
	out, err := exec.Command(self(t), agentCommand, "fds").Output()
	var child result
	if err != nil || json.Unmarshal(out, &child) != nil || !slices.Contains(child.List, leaked) {
		t.Fatalf("positive control: a plain child should hold %s: %q (%v)", leaked, out, err)
	}
	r, _ := attempt(t, baseConfig(t), "fds")
	if !r.OK || slices.Contains(r.List, leaked) {
		t.Fatalf("the sandboxed harness holds the daemon's inherited %s: %+v", leaked, r)
	}
}

// standInConfig is a stand-in daemon's sandbox named name, with this
// binary bound as the agent.
func standInConfig(name string) sandbox.Config {
	exe, _ := os.Executable()
	return sandbox.Config{Name: name, Binds: []sandbox.Bind{{Src: exe, Dst: agentPath}}}
}

// sandboxedRun starts a sandbox from cfg (stdout set here), runs the agent
// with args once and returns its result line.
func sandboxedRun(cfg sandbox.Config, args ...string) (result, error) {
	var r result
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pr, pw, err := os.Pipe()
	if err != nil {
		return r, err
	}
	defer pr.Close()
	cfg.Stdout, cfg.Stderr = pw, os.Stderr
	sb, err := sandbox.Start(ctx, cfg)
	pw.Close()
	if err != nil {
		return r, fmt.Errorf("start sandbox: %w", err)
	}
	defer sb.Close()
	if _, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: append([]string{agentCommand}, args...)}); err != nil {
		return r, fmt.Errorf("run: %w", err)
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || json.Unmarshal([]byte(line), &r) != nil {
		return r, fmt.Errorf("harness said %q: %v", line, err)
	}
	return r, nil
}

// TestInitRunsBatchAndTheHarnessAsAnyProcess: a sandbox's init runs as
// SCHED_BATCH, from its spawner (session.Batch): waking between runs, it
// does not preempt the agents. The harness, and what it starts, run as
// SCHED_OTHER, as the daemon (this test) does: the init's forker thread
// goes back to it before each fork. The init's policy, read from the
// host, is the positive control: where a policy other than SCHED_OTHER is
// set, the test reads it.
func TestInitRunsBatchAndTheHarnessAsAnyProcess(t *testing.T) {
	need(t)
	if attr, err := unix.SchedGetAttr(0, 0); err != nil || attr.Policy != unix.SCHED_NORMAL {
		t.Fatalf("the test runs with policy %+v (%v): run it as SCHED_OTHER, which the init's SCHED_BATCH is told from", attr, err)
	}
	ctx, sb := openSandbox(t, baseConfig(t))
	r, _ := runAgain(t, ctx, sb, nil, "policy")
	if !r.OK || r.Value != "0" || len(r.List) != 1 || r.List[0] != "0" {
		t.Errorf("the harness's policy %s, its child's %v (%+v): want 0 (SCHED_OTHER) for both", r.Value, r.List, r)
	}
	attr, err := unix.SchedGetAttr(sb.Pid(), 0)
	if err != nil || attr.Policy != unix.SCHED_BATCH {
		t.Errorf("the init's policy %+v (%v): want %d (SCHED_BATCH)", attr, err, unix.SCHED_BATCH)
	}
}
