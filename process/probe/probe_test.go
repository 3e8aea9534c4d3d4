package probe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
)

// The test binary is its own probe child, as harnessd is.
func TestMain(m *testing.M) {
	sandbox.Init()
	if len(os.Args) > 1 && os.Args[1] == ChildCommand {
		os.Exit(RunChild(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func TestTreeVerdict(t *testing.T) {
	cg := process.Mechanisms{Subreaper: true, Cgroup: true, CgroupPath: "/cg/harnessd-1-x"}
	good := treeFacts{mech: cg, killMode: "cgroup", inGroup: true, escaped: true, adopted: true, orphanPPID: 42, memberEnded: true}
	tf := treeVerdict(good)
	for name, it := range map[string]Item{"groups": tf.groups, "subreaper": tf.subreaper, "cgroup": tf.cgroup, "kill": tf.kill} {
		if it.Status != StatusVerified {
			t.Errorf("all good: %s = %+v, want verified", name, it)
		}
	}

	mod := func(f func(*treeFacts)) treeFindings { c := good; f(&c); return treeVerdict(c) }
	cases := []struct {
		name string
		got  Item
		want string // the status
		says string // a part of the detail
	}{
		{"not in group", mod(func(f *treeFacts) { f.inGroup = false }).groups, StatusFailed, "not in its process group"},
		{"member survived", mod(func(f *treeFacts) { f.memberEnded = false }).groups, StatusFailed, "survived the group kill"},
		{"not adopted", mod(func(f *treeFacts) { f.adopted = false; f.orphanPPID = 1 }).subreaper, StatusFailed, "re-parented to pid 1"},
		{"no subreaper", mod(func(f *treeFacts) { f.mech.Subreaper = false; f.adopted = false }).subreaper, "", ""},
		{"leaf refused", mod(func(f *treeFacts) { f.killMode = "subreaper+pgroup" }).cgroup, StatusFailed, "could not be started in a leaf"},
		{"cgroup survivors", mod(func(f *treeFacts) { f.alive = []string{"orphan (pid 9)"} }).cgroup, StatusFailed, "survivors after cgroup.kill"},
		{"no cgroup", mod(func(f *treeFacts) { f.mech.Cgroup = false; f.killMode = "pgroup" }).cgroup, "", ""},
		{"kill survivors", mod(func(f *treeFacts) { f.alive = []string{"orphan (pid 9)"} }).kill, StatusFailed, "left orphan (pid 9) alive"},
		{"nothing escaped", mod(func(f *treeFacts) { f.escaped = false }).kill, StatusFailed, "nothing was proven"},
		{"pgroup kill", mod(func(f *treeFacts) { f.mech.Cgroup = false; f.killMode = "subreaper+pgroup" }).kill, StatusVerified, "subreaper+pgroup: leader"},
	}
	for _, c := range cases {
		if c.got.Status != c.want || !strings.Contains(c.got.Detail, c.says) {
			t.Errorf("%s: %+v, want %q saying %q", c.name, c.got, c.want, c.says)
		}
	}
	if f := failedTree("boom"); f.kill.Status != StatusFailed || f.cgroup.Detail != "boom" || f.groups.Status != StatusFailed {
		t.Errorf("failedTree = %+v", f)
	}
}

func TestPID1Item(t *testing.T) {
	for _, c := range []struct {
		pi   PIDInfo
		want string
		says string
	}{
		{PIDInfo{PID: 1, PID1: true, NestedNamespace: true}, StatusAvailable, "harnessd is PID 1 in a nested PID namespace"},
		{PIDInfo{PID: 7, Init: "harnessd", NestedNamespace: true}, StatusAvailable, "this check runs as pid 7"},
		{PIDInfo{PID: 7, Init: "systemd"}, StatusMissing, `PID 1 in the initial PID namespace is "systemd"`},
	} {
		if got := pid1Item(c.pi); got.Status != c.want || !strings.Contains(got.Detail, c.says) {
			t.Errorf("pid1Item(%+v) = %+v, want %s saying %q", c.pi, got, c.want, c.says)
		}
	}
}

func TestReadPIDInfo(t *testing.T) {
	pi := ReadPIDInfo()
	if pi.PID != os.Getpid() || pi.PID1 != (pi.PID == 1) || !strings.HasPrefix(pi.Namespace, "pid:[") || pi.Init == "" {
		t.Fatalf("ReadPIDInfo = %+v", pi)
	}
}

func TestUsernsMissingNamesTheSysctl(t *testing.T) {
	dir := t.TempDir()
	for path, v := range map[string]string{"user/max_user_namespaces": "0\n", "kernel/apparmor_restrict_unprivileged_userns": "1\n", "kernel/unprivileged_userns_clone": "1\n"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755)
		os.WriteFile(filepath.Join(dir, path), []byte(v), 0o644)
	}
	got := usernsMissing(&os.PathError{Op: "fork/exec", Path: "x", Err: syscall.EPERM}, dir)
	if got.Status != StatusMissing || !strings.Contains(got.Detail, "operation not permitted") ||
		!strings.Contains(got.Detail, "user.max_user_namespaces is 0") || !strings.Contains(got.Detail, "AppArmor") ||
		strings.Contains(got.Detail, "unprivileged_userns_clone") {
		t.Fatalf("usernsMissing = %+v", got)
	}
}

func TestBaseItems(t *testing.T) {
	for _, c := range []struct {
		name    string
		mech    process.Mechanisms
		opts    process.Options
		uid     int
		cgErr   string
		sub, cg string
		cgSays  string
	}{
		{"all there", process.Mechanisms{Subreaper: true, Cgroup: true, CgroupPath: "/cg/x"}, process.Options{}, 0, "", StatusAvailable, StatusAvailable, "/cg/x"},
		{"off", process.Mechanisms{}, process.Options{Cgroup: process.ModeOff, Subreaper: process.ModeOff}, 0, "", StatusOff, StatusOff, "--cgroup off"},
		{"missing as user", process.Mechanisms{Notes: []string{"subreaper: EPERM", "cgroup: read-only"}}, process.Options{}, 1000, "", StatusMissing, StatusMissing, "read-only (not root"},
		{"probe error wins", process.Mechanisms{Notes: []string{"cgroup: note"}}, process.Options{}, 0, "no cgroup2 filesystem mounted", StatusMissing, StatusMissing, "no cgroup2 filesystem mounted"},
	} {
		rep := &Report{Checks: map[string]Item{}, UID: c.uid, Cgroup: process.CgroupInfo{Error: c.cgErr}, PID: PIDInfo{PID: 5, Init: "init"}}
		baseItems(rep, c.mech, c.opts)
		if rep.Checks[Subreaper].Status != c.sub || rep.Checks[Cgroup].Status != c.cg || !strings.Contains(rep.Checks[Cgroup].Detail, c.cgSays) {
			t.Errorf("%s: %+v", c.name, rep.Checks)
		}
		if rep.Checks[ProcessGroups].Status != StatusAvailable || rep.Checks[PID1].Status != StatusMissing {
			t.Errorf("%s: %+v", c.name, rep.Checks)
		}
	}
}

func TestReportSettle(t *testing.T) {
	rep := &Report{Required: []string{Cgroup, PTY}, Checks: map[string]Item{
		Cgroup: {Status: StatusVerified}, PTY: {Status: StatusMissing}, Kill: {Status: StatusVerified},
	}}
	rep.settle()
	if rep.OK || !slices.Equal(rep.Unmet, []string{PTY}) {
		t.Fatalf("unmet requirement: OK=%v Unmet=%v", rep.OK, rep.Unmet)
	}
	rep.Checks[PTY] = Item{Status: StatusAvailable}
	rep.settle()
	if !rep.OK || len(rep.Unmet) != 0 {
		t.Fatalf("all met: OK=%v Unmet=%v", rep.OK, rep.Unmet)
	}
	rep.Checks[Userns] = Item{Status: StatusFailed}
	rep.settle()
	if rep.OK || len(rep.Unmet) != 0 {
		t.Fatalf("a failed probe, requirements met: OK=%v Unmet=%v", rep.OK, rep.Unmet)
	}
	tf := treeFindings{kill: Item{Status: StatusVerified}, groups: Item{Status: StatusVerified}}
	rep.Checks[Subreaper] = Item{Status: StatusOff}
	rep.settleTree(tf)
	if rep.Checks[Subreaper].Status != StatusOff || rep.Checks[Kill].Status != StatusVerified {
		t.Fatalf("settleTree overwrote an unsettled item: %+v", rep.Checks)
	}
}

func TestWithinTurnsPanicsAndOverrunsIntoFailures(t *testing.T) {
	got := runProbe(time.Second, func(context.Context) Item { panic("kaboom") })
	if got.Status != StatusFailed || !strings.Contains(got.Detail, "panicked: kaboom") {
		t.Fatalf("panic: %+v", got)
	}
	release := make(chan struct{})
	defer close(release)
	got = runProbe(time.Millisecond, func(context.Context) Item { <-release; return Item{Status: StatusVerified} })
	if got.Status != StatusFailed || !strings.Contains(got.Detail, "timed out") {
		t.Fatalf("overrun: %+v", got)
	}
	if got := runProbe(time.Second, func(context.Context) Item { return Item{Status: StatusVerified} }); got.Status != StatusVerified {
		t.Fatalf("ok probe: %+v", got)
	}
}

func TestListAgents(t *testing.T) {
	if a, note := listAgents(nil); a != nil || note != "this build knows no agent presets" {
		t.Fatalf("no hook: %v %q", a, note)
	}
	if a, note := listAgents(func(context.Context) []Agent { return nil }); a == nil || len(a) != 0 || note != "" {
		t.Fatalf("none known: %v %q", a, note)
	}
	if _, note := listAgents(func(context.Context) []Agent { panic(errors.New("bad preset")) }); !strings.Contains(note, "listing agents failed: probe panicked: bad preset") {
		t.Fatalf("panicking hook: %q", note)
	}
}

func TestRunChildRefusesBadModes(t *testing.T) {
	if RunChild(nil) != childUsage || RunChild([]string{"nope"}) != childUsage || RunChild([]string{"true"}) != childOK {
		t.Fatal("RunChild exit codes")
	}
}

// TestRunOnThisMachine runs every probe for real, through a Supervisor and
// this test binary as the probe child: nothing that is present may fail,
// and nothing may be left behind.
func TestRunOnThisMachine(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(Config{All: true, Self: self, Required: []string{Kill}, Version: "test",
		ListAgents: func(context.Context) []Agent { return []Agent{{Name: "a", Command: "a"}} }})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range Names {
		it, ok := rep.Checks[n]
		if !ok || it.Status == StatusFailed || it.Status == "" {
			t.Errorf("%s: %+v (present: %v)", n, it, ok)
		}
	}
	if rep.Checks[Kill].Status != StatusVerified || !rep.OK || len(rep.Unmet) != 0 || rep.Version != "test" || len(rep.Agents) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	// Only what is required is probed without All.
	rep, err = Run(Config{Self: self, Required: []string{PTY}, Options: process.Options{Cgroup: process.ModeOff}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rep.Checks[Kill]; ok || rep.Agents != nil {
		t.Fatalf("kill probed or agents listed without All: %+v", rep)
	}
	if rep.Checks[Cgroup].Status != StatusOff {
		t.Fatalf("cgroup with --cgroup off: %+v", rep.Checks[Cgroup])
	}
}
