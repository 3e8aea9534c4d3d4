package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
)

// supervised starts the test agent in a fresh sandbox through a
// process.Supervisor, the way sessions do: the pipes are made by package
// process after the sandbox exists and passed in with the command.
func supervised(t *testing.T, spec process.Spec, mode ...string) (*sandbox.Sandbox, *process.Process) {
	t.Helper()
	need(t)
	sup, err := process.NewSupervisor(process.Options{Cgroup: process.ModeOff, Subreaper: process.ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, baseConfig(t))
	if err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	spec.Name, spec.Path, spec.Launcher = "harness", agentPath, sb.Launcher()
	spec.Args = append([]string{agentCommand}, mode...)
	spec.Env = slices.Concat(spec.Env, agentEnv)
	p, err := sup.Start(spec)
	if err != nil {
		t.Fatalf("start supervised: %v", err)
	}
	t.Cleanup(func() { p.Stop(context.Background(), 0) })
	return sb, p
}

func nextLine(t *testing.T, p *process.Process) result {
	t.Helper()
	select {
	case l, ok := <-p.Lines():
		if !ok {
			t.Fatalf("agent ended without a result; stderr: %s", p.StderrTail())
		}
		var r result
		if err := json.Unmarshal(l.Text, &r); err != nil {
			t.Fatalf("agent said %q: %v", l.Text, err)
		}
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no line from the agent within 30s")
	}
	return result{}
}

func TestSupervisedTreeRunsInTheSandbox(t *testing.T) {
	sb, p := supervised(t, process.Spec{Env: []string{"A=1"}}, "procs")
	r := nextLine(t, p)
	if !r.OK || r.N > 3 {
		t.Fatalf("inside the sandbox the agent should see its own few processes: %+v", r)
	}
	st, err := p.Wait(context.Background())
	if err != nil || st.Code != 0 {
		t.Fatalf("exit = %v, %v", st, err)
	}
	// The tree's pid is its harness's, not the sandbox's init's.
	if p.KillMode() != "sandbox" || p.Pid() <= 1 || p.Pid() == sb.Pid() {
		t.Fatalf("kill mode %q pid %d (init %d)", p.KillMode(), p.Pid(), sb.Pid())
	}
}

func TestSupervisedExitStatusAndStderr(t *testing.T) {
	_, p := supervised(t, process.Spec{}, "nosuchmode")
	st, err := p.Wait(context.Background())
	if err != nil || st.Code != 2 {
		t.Fatalf("exit = %v, %v; want code 2", st, err)
	}
	if tail := p.StderrTail(); !strings.Contains(tail, "unknown mode") {
		t.Fatalf("stderr tail %q", tail)
	}
}

func TestSupervisedStopForwardsSIGTERMThenEndsTheTree(t *testing.T) {
	sb, p := supervised(t, process.Spec{}, "term")
	if r := nextLine(t, p); r.Value != "waiting" {
		t.Fatalf("got %+v", r)
	}
	if err := p.Stop(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if r := nextLine(t, p); r.Value != "got SIGTERM" {
		t.Fatalf("got %+v", r)
	}
	st, _ := p.ExitStatus()
	if st.Code != 3 {
		t.Fatalf("exit %v, want 3", st)
	}
	// The run is over; the init stays for the next one, alone.
	if left := leftOf(sb); len(left) != 0 {
		t.Fatalf("processes left in the sandbox: %v (init %d)", left, sb.Pid())
	}
}

func TestRunsInTurnShareNothingButTheSandbox(t *testing.T) {
	need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, baseConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	// The first run starts three sleepers (one in its own session, out of
	// the harness's group) and ends by SIGTERM: none may survive its end.
	rs, ws, _ := os.Pipe()
	r1, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: []string{agentCommand, "spawn"}, Stdout: ws})
	ws.Close()
	if err != nil {
		t.Fatal(err)
	}
	var spawned result
	if err := json.NewDecoder(rs).Decode(&spawned); err != nil || !spawned.OK {
		t.Fatalf("spawn: %+v (%v)", spawned, err)
	}
	rs.Close()
	if n := len(sb.HostPids()); n < 5 {
		t.Fatalf("want init, agent and 3 sleepers, have %d", n)
	}
	sb.Signal(syscall.SIGTERM)
	e1, err := r1.Wait(ctx)
	if err != nil || e1.Status.Signal != "SIGTERM" {
		t.Fatalf("first run: %+v, %v", e1, err)
	}
	if left := leftOf(sb); len(left) != 0 {
		t.Fatalf("after the first run: %v", left)
	}
	rd, wr, _ := os.Pipe()
	defer rd.Close()
	r2, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: []string{agentCommand, "procs"}, Stdout: wr})
	wr.Close()
	if err != nil {
		t.Fatal(err)
	}
	var res result
	if err := json.NewDecoder(rd).Decode(&res); err != nil || res.N > 3 {
		t.Fatalf("second run sees %+v (%v)", res, err)
	}
	if e2, _ := r2.Wait(ctx); e2.Status.Code != 0 || e2.InitDied {
		t.Fatalf("second run: %+v", e2)
	}
	// A missing program fails that run only.
	if _, err := sb.Run(ctx, sandbox.Command{Path: "/no/such/agent"}); err == nil {
		t.Fatal("a missing program started")
	}
	if _, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: []string{agentCommand, "exit", "4"}}); err != nil {
		t.Fatalf("a run after a failed one: %v", err)
	}
	if e, _ := sb.Wait(ctx); e.Status.Code != 4 {
		t.Fatalf("exit %+v, want 4", e)
	}
}

func TestSupervisedStopKillsEscapees(t *testing.T) {
	sb, p := supervised(t, process.Spec{}, "spawn")
	if r := nextLine(t, p); !r.OK {
		t.Fatalf("spawn: %+v", r)
	}
	if n := len(sb.HostPids()); n < 5 {
		t.Fatalf("want init, agent and 3 sleepers, have %d", n)
	}
	if err := p.Stop(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if left := sb.HostPids(); len(left) != 0 {
		t.Fatalf("processes left in the sandbox: %v", left)
	}
}

func TestSupervisedPTY(t *testing.T) {
	_, p := supervised(t, process.Spec{PTY: &process.PTY{}}, "tty")
	var out strings.Builder
	deadline := time.After(30 * time.Second)
	for !strings.Contains(out.String(), "}") {
		select {
		case b, ok := <-p.Output():
			if !ok {
				t.Fatalf("pty closed; output %q", out.String())
			}
			out.Write(b)
		case <-deadline:
			t.Fatalf("no tty answer; output %q", out.String())
		}
	}
	var r result
	s := out.String()
	if err := json.Unmarshal([]byte(s[strings.Index(s, "{"):strings.LastIndex(s, "}")+1]), &r); err != nil || !r.OK {
		t.Fatalf("tty answer %q: %v", s, err)
	}
}

// leftOf lists the sandbox's processes other than its init and an exec
// stage waiting for the next run (which, between its fork and its exec,
// still shows the init's command line).
func leftOf(sb *sandbox.Sandbox) []string {
	var out []string
	for _, pid := range sb.HostPids() {
		if pid == sb.Pid() {
			continue
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); !strings.Contains(cmd, "__sandbox-exec") && !strings.Contains(cmd, "__sandbox-init") {
			out = append(out, fmt.Sprintf("%d (%s)", pid, cmd))
		}
	}
	return out
}

// TestLauncherTranslatesHostPaths: with the workspace and HOME shown at
// fixed paths inside, a command the daemon builds from their host paths
// (directory, environment, arguments) runs with the inside paths, and what
// it writes there lands in the host directories. The control: the host
// directory above them (not translated) is not there inside.
func TestLauncherTranslatesHostPaths(t *testing.T) {
	need(t)
	root := hostDir(t)
	ws, home := root+"/ep-1/workspace", root+"/ep-1/home"
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := baseConfig(t)
	cfg.Workspace, cfg.WorkspaceDst, cfg.Home, cfg.HomeDst = ws, "/run/ep/workspace", home, "/run/ep/home"
	cfg.Hide = []string{root}
	sup, err := process.NewSupervisor(process.Options{Cgroup: process.ModeOff, Subreaper: process.ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	defer sb.Close()
	if got := sb.Inside(home + "/.config/x"); got != "/run/ep/home/.config/x" {
		t.Errorf("Inside(home/.config/x) = %q", got)
	}
	script := `pwd; echo "$HOME"; echo "$1"; echo "$2"; echo hi > "$HOME/h"; echo ws > w; test -e "$3" && echo visible || echo absent`
	p, err := sup.Start(process.Spec{Name: "sh", Path: "/bin/sh", Launcher: sb.Launcher(), Dir: ws,
		Args: []string{"-c", script, "sh", "--config=" + home + "/c.json", ws + "/sub", root + "/ep-1"},
		Env:  []string{"PATH=/usr/bin:/bin", "HOME=" + home}})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range p.Lines() {
		lines = append(lines, string(l.Text))
	}
	if st, err := p.Wait(ctx); err != nil || st.Code != 0 {
		t.Fatalf("sh: %v %v; stderr %s", st, err, p.StderrTail())
	}
	want := []string{"/run/ep/workspace", "/run/ep/home", "--config=/run/ep/home/c.json", "/run/ep/workspace/sub", "absent"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("inside the sandbox the command saw %q, want %q", lines, want)
	}
	for p, want := range map[string]string{home + "/h": "hi\n", ws + "/w": "ws\n"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s on the host: %q %v, want %q", p, b, err, want)
		}
	}
}
