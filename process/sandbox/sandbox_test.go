package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/procfs"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Init()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case agentCommand:
			os.Exit(runAgent(os.Args[2:]))
		case daemonCommand:
			os.Exit(runDaemon())
		case ttyDaemonCommand:
			os.Exit(runTTYDaemon())
		case autogroupDaemonCommand:
			os.Exit(runAutogroupDaemon())
		}
	}
	os.Exit(testbin.Main(m))
}

func signalNotify(ch chan os.Signal) { signal.Notify(ch, syscall.SIGTERM) }

var probeOnce = sync.OnceValue(func() sandbox.ProbeResult {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return sandbox.Probe(ctx, "")
})

// need skips (or fails under CI=true) where sandboxes cannot be made.
func need(t *testing.T) {
	t.Helper()
	if r := probeOnce(); !r.OK {
		testbin.Missing(t, "sandbox: %s", r.Detail)
	}
}

// self is the test binary, bound into every sandbox as the agent.
func self(t testing.TB) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func baseConfig(t testing.TB) sandbox.Config {
	return sandbox.Config{Name: t.Name(), Binds: []sandbox.Bind{{Src: self(t), Dst: agentPath}}}
}

// running is a started sandbox with its harness's stdout as lines.
type running struct {
	sb    *sandbox.Sandbox
	lines chan string
}

// start starts a sandbox from cfg and runs the agent in mode with env.
func start(t *testing.T, cfg sandbox.Config, env []string, mode ...string) *running {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Stdout = w
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, cfg)
	w.Close()
	if err != nil {
		r.Close()
		t.Fatalf("start sandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("close sandbox: %v", err)
		}
	})
	rn := &running{sb: sb, lines: make(chan string, 64)}
	go func() {
		defer r.Close()
		defer close(rn.lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			rn.lines <- sc.Text()
		}
	}()
	if _, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Args: append([]string{agentCommand}, mode...), Env: slices.Concat(env, agentEnv)}); err != nil {
		t.Fatalf("run agent: %v", err)
	}
	return rn
}

// next returns the agent's next result line.
func (rn *running) next(t *testing.T) result {
	t.Helper()
	select {
	case l, ok := <-rn.lines:
		if !ok {
			t.Fatal("agent ended without a result")
		}
		var r result
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("agent said %q: %v", l, err)
		}
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no result from the agent within 30s")
	}
	return result{}
}

func (rn *running) wait(t *testing.T) sandbox.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := rn.sb.Wait(ctx)
	if err != nil {
		t.Fatalf("sandbox did not end: %v", err)
	}
	return e
}

// attempt runs one agent mode and returns its result and the exit.
func attempt(t *testing.T, cfg sandbox.Config, mode ...string) (result, sandbox.Exit) {
	t.Helper()
	rn := start(t, cfg, nil, mode...)
	r := rn.next(t)
	return r, rn.wait(t)
}

// hostDir makes a directory outside /tmp (which every sandbox replaces),
// readable by any uid, removed after the test.
func hostDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "harnessd-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSeesOnlyItsOwnProcesses(t *testing.T) {
	need(t)
	r, e := attempt(t, baseConfig(t), "procs")
	if !r.OK || !slices.Equal(r.List, []string{"1", r.Value}) {
		t.Fatalf("/proc inside lists %v (%s); want only the init (1) and the agent (%s)", r.List, r.Error, r.Value)
	}
	if e.Status.Code != 0 || e.InitDied {
		t.Fatalf("exit %+v", e)
	}
}

func TestCannotSignalOrPtraceAHostProcess(t *testing.T) {
	need(t)
	victim := exec.Command("/bin/sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Process.Kill(); victim.Wait() }()
	for _, seccomp := range []bool{false, true} {
		cfg := baseConfig(t)
		cfg.Seccomp = seccomp
		if r, _ := attempt(t, cfg, "kill", strconv.Itoa(victim.Process.Pid)); r.OK {
			t.Errorf("seccomp %v: SIGKILL to host pid %d was accepted", seccomp, victim.Process.Pid)
		}
		if r, _ := attempt(t, cfg, "ptrace", strconv.Itoa(os.Getpid())); r.OK {
			t.Errorf("seccomp %v: ptrace of the daemon (pid %d) was accepted", seccomp, os.Getpid())
		} else if seccomp && r.Errno != "EPERM" {
			t.Errorf("ptrace under seccomp: %s, want EPERM", r.Errno)
		}
		if r, _ := attempt(t, cfg, "read", fmt.Sprintf("/proc/%d/environ", os.Getpid())); r.OK {
			t.Errorf("seccomp %v: read the daemon's environment", seccomp)
		}
	}
	if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the host process is gone: %v", err)
	}
}

func TestCannotReadAHiddenPath(t *testing.T) {
	need(t)
	d := hostDir(t)
	secret := filepath.Join(d, "token")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Control: without hiding, the file is readable from inside.
	if r, _ := attempt(t, baseConfig(t), "read", secret); !r.OK || r.Value != "s3cret" {
		t.Fatalf("control: the unhidden file was not readable inside: %+v", r)
	}
	cfg := baseConfig(t)
	cfg.Hide = []string{d}
	if r, _ := attempt(t, cfg, "read", secret); r.OK || r.Errno != "ENOENT" {
		t.Fatalf("read a file under a hidden directory: %+v", r)
	}
	cfg.Hide = []string{secret}
	if r, _ := attempt(t, cfg, "read", secret); !r.OK || r.Value != "" {
		t.Fatalf("a hidden file is not empty inside: %+v", r)
	}
}

func TestCannotWriteEtcMountOrRegainRoot(t *testing.T) {
	need(t)
	target := "/etc/harnessd-sandbox-test-" + strconv.Itoa(os.Getpid())
	for _, seccomp := range []bool{false, true} {
		cfg := baseConfig(t)
		cfg.Seccomp = seccomp
		if r, _ := attempt(t, cfg, "write", target); r.OK {
			t.Errorf("seccomp %v: wrote %s", seccomp, target)
		}
		if r, _ := attempt(t, cfg, "mount"); r.OK {
			t.Errorf("seccomp %v: mounted a tmpfs", seccomp)
		}
		if r, _ := attempt(t, cfg, "setuid0"); r.OK {
			t.Errorf("seccomp %v: became uid 0", seccomp)
		}
	}
	if _, err := os.Stat(target); err == nil {
		os.Remove(target)
		t.Fatalf("%s appeared on the host", target)
	}
	// The filter refuses new namespaces outright (without it a
	// multi-threaded Go agent gets EINVAL, a single-threaded one could
	// nest a user namespace).
	cfg := baseConfig(t)
	cfg.Seccomp = true
	if r, _ := attempt(t, cfg, "unshare"); r.OK || r.Errno != "EPERM" {
		t.Fatalf("unshare under seccomp: %+v, want EPERM", r)
	}
	if r, _ := attempt(t, cfg, "clone3"); r.Errno != "ENOSYS" {
		t.Fatalf("clone3 under seccomp: %+v, want ENOSYS", r)
	}
	if r, _ := attempt(t, baseConfig(t), "clone3"); r.Errno != "EINVAL" {
		t.Fatalf("control: clone3 without seccomp: %+v, want EINVAL", r)
	}
}

func TestWorkspaceHomeAndTmpAreWritable(t *testing.T) {
	need(t)
	root := hostDir(t)
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	for _, d := range []string{ws, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := baseConfig(t)
	cfg.Workspace, cfg.Home, cfg.WorkspaceAt, cfg.Hide = ws, home, "/app", []string{root}
	for _, p := range []string{ws + "/a", home + "/b", "/tmp/c", "/app/d"} {
		if r, _ := attempt(t, cfg, "write", p); !r.OK {
			t.Errorf("write %s: %+v", p, r)
		}
	}
	for _, p := range []string{ws + "/a", home + "/b", ws + "/d"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "sandbox" {
			t.Errorf("host sees %s as %q (%v)", p, b, err)
		}
	}
	if _, err := os.Stat("/tmp/c"); err == nil {
		t.Errorf("the sandbox's /tmp is the host's")
	}
}

func TestCannotSeeAnotherSandboxsWorkspace(t *testing.T) {
	need(t)
	root := hostDir(t)
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(a, "answer"), []byte("42"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgA := baseConfig(t)
	cfgA.Workspace, cfgA.Hide = a, []string{root}
	rnA := start(t, cfgA, nil, "term") // A is alive while B looks
	rnA.next(t)
	cfgB := baseConfig(t)
	cfgB.Workspace, cfgB.Hide = b, []string{root}
	if r, _ := attempt(t, cfgB, "read", filepath.Join(a, "answer")); r.OK {
		t.Fatalf("sandbox B read sandbox A's workspace: %+v", r)
	}
	if r, _ := attempt(t, cfgB, "write", filepath.Join(a, "planted")); r.OK {
		t.Fatalf("sandbox B wrote into sandbox A's workspace")
	}
	if r, _ := attempt(t, cfgA, "read", filepath.Join(a, "answer")); !r.OK || r.Value != "42" {
		t.Fatalf("control: A cannot read its own workspace: %+v", r)
	}
	// The harnesses run as different host uids.
	ua, _ := rnA.sb.HostIDs()
	if os.Geteuid() == 0 {
		rnB := start(t, cfgB, nil, "term")
		rnB.next(t)
		if ub, _ := rnB.sb.HostIDs(); ua == ub {
			t.Fatalf("both sandboxes run as host uid %d", ua)
		}
	}
}

func TestOnlyLoopbackAndTheDoors(t *testing.T) {
	need(t)
	if r, _ := attempt(t, baseConfig(t), "ifaces"); !r.OK || !slices.Equal(r.List, []string{"lo"}) {
		t.Fatalf("interfaces inside: %+v, want only lo", r)
	}
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go serve(host, "host")

	cfg := baseConfig(t)
	cfg.Doors = []sandbox.Door{{Name: "mcp"}, {Name: "model", Port: 8001}}
	rn := start(t, cfg, nil, "term")
	rn.next(t)
	mcp, model := rn.sb.Door("mcp"), rn.sb.Door("model")
	if mcp == nil || model == nil {
		t.Fatalf("doors: %v", rn.sb.Doors())
	}
	if got := model.Addr().String(); got != "127.0.0.1:8001" {
		t.Errorf("model door at %s, want 127.0.0.1:8001", got)
	}
	go serve(mcp, "door")
	// A second sandbox with the same doors: the served one answers; the
	// host's listener and the other sandbox's are out of reach.
	cfg2 := baseConfig(t)
	cfg2.Doors = []sandbox.Door{{Name: "mcp"}}
	rn2 := start2(t, cfg2, func(sb *sandbox.Sandbox) { go serve(sb.Door("mcp"), "own door") },
		"connect", "DOOR")
	if r := rn2.next(t); !r.OK || r.Value != "own door" {
		t.Fatalf("connect to its own door: %+v", r)
	}
	for _, addr := range []string{host.Addr().String(), mcp.Addr().String(), "127.0.0.1:8001"} {
		if addr == rn2.sb.Door("mcp").Addr().String() {
			continue // the same port number inside is its own door
		}
		if r, _ := attempt(t, cfg2, "connect", addr); r.OK {
			t.Errorf("reached %s from inside: %+v", addr, r)
		}
	}
	// Control: the host reaches the door it serves.
	c, err := net.Dial("tcp", mcp.Addr().String())
	if err == nil {
		c.Close()
		t.Logf("note: host reached %s on its own loopback (a different namespace's port)", mcp.Addr())
	}
}

// start2 starts a sandbox, lets prepare serve its doors, then runs mode
// with "DOOR" replaced by the mcp door's address.
func start2(t *testing.T, cfg sandbox.Config, prepare func(*sandbox.Sandbox), mode ...string) *running {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Stdout, cfg.Stderr = w, os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, cfg)
	w.Close()
	if err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	prepare(sb)
	rn := &running{sb: sb, lines: make(chan string, 64)}
	go func() {
		defer r.Close()
		defer close(rn.lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			rn.lines <- sc.Text()
		}
	}()
	args := []string{agentCommand}
	for _, m := range mode {
		args = append(args, strings.ReplaceAll(m, "DOOR", sb.Door("mcp").Addr().String()))
	}
	if _, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: args}); err != nil {
		t.Fatal(err)
	}
	return rn
}

func serve(l net.Listener, say string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte(say))
		c.Close()
	}
}

func TestHarnessRunsAsAnUnprivilegedHostUID(t *testing.T) {
	need(t)
	cfg := baseConfig(t)
	cfg.Hostname = "episode-1"
	rn := start(t, cfg, []string{"A=1"}, "term")
	rn.next(t)
	agent := rn.sb.HarnessPid()
	if agent == 0 {
		t.Fatalf("no agent among %v", rn.sb.HostPids())
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", agent))
	if err != nil {
		t.Fatal(err)
	}
	uid := ""
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Uid:"); ok {
			uid = strings.Fields(v)[0]
		}
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok && strings.TrimSpace(v) != "0000000000000000" {
			t.Errorf("agent has effective capabilities %s", v)
		}
		if v, ok := strings.CutPrefix(l, "CapBnd:"); ok && strings.TrimSpace(v) != "0000000000000000" {
			t.Errorf("agent has a bounding set %s", v)
		}
		if v, ok := strings.CutPrefix(l, "NoNewPrivs:"); ok && strings.TrimSpace(v) != "1" {
			t.Errorf("agent without no_new_privs")
		}
	}
	want, _ := rn.sb.HostIDs()
	if uid != strconv.Itoa(want) {
		t.Fatalf("agent's host uid %s, want %d", uid, want)
	}
	if os.Geteuid() == 0 && (uid == "0" || want < sandbox.DefaultIDBase) {
		t.Fatalf("agent's host uid %s is privileged", uid)
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", agent))
	if want := "A=1\x00" + strings.Join(agentEnv, "\x00") + "\x00"; err != nil || string(env) != want {
		t.Errorf("agent's environment %q (%v), want exactly %q", env, err, want)
	}
	// SIGTERM to the init reaches the agent's group; its exit code is exact.
	if err := rn.sb.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if r := rn.next(t); r.Value != "got SIGTERM" {
		t.Fatalf("after SIGTERM: %+v", r)
	}
	if e := rn.wait(t); e.Status.Code != 3 || e.Status.Signal != "" || e.InitDied {
		t.Fatalf("exit %+v, want code 3", e)
	}
}

func TestHostnameAndTheSingleIDMap(t *testing.T) {
	need(t)
	cfg := baseConfig(t)
	cfg.Hostname = "episode-2"
	if r, _ := attempt(t, cfg, "hostname"); r.Value != "episode-2" {
		t.Fatalf("hostname inside %q", r.Value)
	}
	cfg.IDs = sandbox.IDSelf
	r, e := attempt(t, cfg, "id")
	if r.Value != "0:0" || e.Status.Code != 0 {
		t.Fatalf("single map: ids %q, exit %+v", r.Value, e)
	}
	if r, _ := attempt(t, cfg, "procs"); !slices.Equal(r.List, []string{"1", r.Value}) {
		t.Fatalf("single map: /proc lists %v", r.List)
	}
	if r, _ := attempt(t, cfg, "write", "/etc/harnessd-sandbox-test"); r.OK {
		t.Fatalf("single map: root inside wrote /etc")
	}
}

func TestPTYHarness(t *testing.T) {
	need(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		testbin.Missing(t, "no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	cfg := baseConfig(t)
	cfg.Stdin, cfg.Stdout, cfg.Stderr, cfg.TTY = tty, tty, tty, true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, cfg)
	tty.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if _, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: []string{agentCommand, "tty"}}); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(ptmx).ReadString('\n')
	if err != nil {
		t.Fatalf("read the pty: %q %v", line, err)
	}
	var r result
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &r); err != nil {
		t.Fatalf("agent said %q", line)
	}
	if !r.OK || r.Value != "isatty=true" || len(r.List) != 1 || !strings.HasPrefix(r.List[0], "/dev/pts/") {
		t.Fatalf("on a pty: %+v", r)
	}
	if e, _ := sb.Wait(ctx); e.Status.Code != 0 {
		t.Fatalf("exit %+v", e)
	}
}

func TestExitStatusesAreExact(t *testing.T) {
	need(t)
	for _, c := range []struct {
		args   []string
		code   int
		signal string
	}{
		{[]string{"exit", "0"}, 0, ""},
		{[]string{"exit", "7"}, 7, ""},
		{[]string{"exit", "255"}, 255, ""},
		{[]string{"signal", "9"}, -1, "SIGKILL"},
		{[]string{"signal", "15"}, -1, "SIGTERM"},
	} {
		rn := start(t, baseConfig(t), nil, c.args...)
		e := rn.wait(t)
		if e.Status.Code != c.code || e.Status.Signal != c.signal || e.InitDied {
			t.Errorf("%v: exit %+v, want code %d signal %q", c.args, e, c.code, c.signal)
		}
	}
}

func TestMissingProgramIsAnError(t *testing.T) {
	need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, baseConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	_, err = sb.Run(ctx, sandbox.Command{Path: "/no/such/agent"})
	var se *sandbox.SetupError
	if !errors.As(err, &se) || se.Stage != sandbox.StageExec || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("run of a missing program: %v", err)
	}
}

func TestBadConfigIsRefused(t *testing.T) {
	for _, cfg := range []sandbox.Config{
		{Workspace: "relative"},
		{Hide: []string{"/"}},
		{Doors: []sandbox.Door{{Name: "a"}, {Name: "a"}}},
		{Doors: []sandbox.Door{{Name: "a", Port: 70000}}},
		{WorkspaceAt: "/app"},
		{Limits: sandbox.Limits{Pids: -1}},
		{IDs: "bogus"},
		{Binds: []sandbox.Bind{{Src: "/a\x00b"}}},
	} {
		if _, err := sandbox.Start(context.Background(), cfg); !errors.Is(err, sandbox.ErrInvalidConfig) {
			t.Errorf("%+v: %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

func TestForkFloodStopsAtPids(t *testing.T) {
	need(t)
	cfg := baseConfig(t)
	cfg.Limits = sandbox.Limits{Pids: 48, CPU: 0.5}
	rn := start(t, cfg, nil, "forkflood", "200")
	r, e := rn.next(t), rn.wait(t)
	if r.OK || r.N >= 48 {
		t.Fatalf("fork flood started %d of 200 processes (%+v)", r.N, r)
	}
	if e.Limit != sandbox.LimitPids {
		t.Fatalf("limit hit %q, want pids", e.Limit)
	}
	dirs := rn.sb.CgroupDirs()
	if err := rn.sb.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s left after Close", d)
		}
	}
	t.Logf("flood stopped after %d processes (%s)", r.N, r.Error)
}

// TestMemoryHogIsKilledAndDetected runs only when HARNESSD_TEST_OOM=1: the
// kernel's OOM kill it provokes happens inside the memory cgroup of whatever
// runs the tests, and on machines whose supervisor watches that cgroup for
// OOM events (this project's development and CI machines end the whole
// command when one happens) it would take the test run down with it.
func TestMemoryHogIsKilledAndDetected(t *testing.T) {
	if os.Getenv("HARNESSD_TEST_OOM") != "1" {
		t.Skip("provokes an OOM kill in the test runner's memory cgroup, which ends the whole run on machines that watch for them; set HARNESSD_TEST_OOM=1 to run it")
	}
	need(t)
	cfg := baseConfig(t)
	cfg.Limits = sandbox.Limits{MemoryBytes: 64 << 20}
	rn := start(t, cfg, nil, "memhog", "1024")
	t.Logf("limits on cgroup %s: %v", rn.sb.CgroupVersion(), rn.sb.CgroupDirs())
	e := rn.wait(t)
	if e.Status.Signal != "SIGKILL" || e.Limit != sandbox.LimitMemory {
		t.Fatalf("memory hog: exit %+v (cgroup %s), want SIGKILL by the memory limit", e, rn.sb.CgroupVersion())
	}
}

func TestNothingLeftAfterTheInitIsKilled(t *testing.T) {
	need(t)
	rn := start(t, baseConfig(t), nil, "spawn")
	if r := rn.next(t); !r.OK {
		t.Fatalf("spawn: %+v", r)
	}
	if n := len(rn.sb.HostPids()); n < 5 {
		t.Fatalf("only %d processes in the sandbox", n)
	}
	if err := syscall.Kill(rn.sb.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e := rn.wait(t)
	if !e.InitDied || e.Status.Signal != "SIGKILL" {
		t.Fatalf("exit %+v", e)
	}
	if left := waitEmpty(rn.sb.PIDNamespace()); len(left) > 0 {
		t.Fatalf("processes left after the init died: %v", left)
	}
}

// waitEmpty waits (a bounded while) for a PID namespace to empty.
func waitEmpty(ns string) []int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := sandbox.PidsInNamespace(ns)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const daemonCommand = "__sandbox-test-daemon"

// runDaemon stands in for harnessd: it starts a sandbox whose agent
// spawns background processes, reports the namespace and blocks.
func runDaemon() int {
	exe, _ := os.Executable()
	ctx := context.Background()
	sb, err := sandbox.Start(ctx, sandbox.Config{Name: "daemon", Binds: []sandbox.Bind{{Src: exe, Dst: agentPath}}})
	if err != nil {
		fmt.Println(`{"error":` + strconv.Quote(err.Error()) + `}`)
		return 1
	}
	if _, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: []string{agentCommand, "spawn"}}); err != nil {
		fmt.Println(`{"error":` + strconv.Quote(err.Error()) + `}`)
		return 1
	}
	for len(sb.HostPids()) < 5 {
		time.Sleep(5 * time.Millisecond)
	}
	st, _ := procfs.ReadStat(sb.Pid())
	fmt.Printf("{\"ns\":%q,\"spawner\":%d}\n", sb.PIDNamespace(), st.PPID)
	time.Sleep(time.Minute)
	return 0
}

func TestNothingLeftAfterTheDaemonDies(t *testing.T) {
	need(t)
	cmd := exec.Command(self(t), daemonCommand)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("daemon said %q: %v", line, err)
	}
	var r struct {
		NS, Error string
		Spawner   int
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.NS == "" {
		t.Fatalf("daemon said %q", line)
	}
	if n := len(sandbox.PidsInNamespace(r.NS)); n < 5 {
		t.Fatalf("only %d processes in the daemon's sandbox", n)
	}
	spawner, err := unix.PidfdOpen(r.Spawner, 0)
	if st, ok := procfs.ReadStat(r.Spawner); err != nil || !ok || st.PPID != cmd.Process.Pid {
		t.Fatalf("the init's parent %d is not the daemon's child (%v)", r.Spawner, err)
	}
	defer unix.Close(spawner)
	cmd.Process.Kill()
	cmd.Wait()
	if left := waitEmpty(r.NS); len(left) > 0 {
		t.Fatalf("processes left after the daemon died: %v", left)
	}
	fds := []unix.PollFd{{Fd: int32(spawner), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 10_000); n != 1 || err != nil {
		t.Fatalf("the daemon's sandbox spawner (pid %d) outlived it: poll %d %v", r.Spawner, n, err)
	}
}

// A spawner that dies takes its inits with it (Pdeathsig), their
// sandboxes report the init's death, and the next Start has a new
// spawner start the next init.
func TestASpawnerThatDiesIsReplaced(t *testing.T) {
	need(t)
	rn := start(t, baseConfig(t), nil, "term")
	rn.next(t)
	st, ok := procfs.ReadStat(rn.sb.Pid())
	if !ok || st.PPID == os.Getpid() || st.PPID <= 1 {
		t.Fatalf("the init's parent is %d (this process %d): not a spawner", st.PPID, os.Getpid())
	}
	if err := syscall.Kill(st.PPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if e := rn.wait(t); !e.InitDied {
		t.Fatalf("after its spawner died the run ended %+v, want the init's death", e)
	}
	next := start(t, baseConfig(t), nil, "term")
	next.next(t)
	st2, ok := procfs.ReadStat(next.sb.Pid())
	if !ok || st2.PPID == st.PPID || st2.PPID == os.Getpid() {
		t.Fatalf("the next init's parent is %d (the dead spawner %d, this process %d)", st2.PPID, st.PPID, os.Getpid())
	}
}

func TestProbe(t *testing.T) {
	r := probeOnce()
	if !r.OK {
		testbin.Missing(t, "sandbox: %s", r.Detail)
	}
	t.Logf("probe: %+v", r)
}

// TestRunRefusesAProgramTheWorkspaceCovers: with the workspace mounted at
// the directory the harness program lives in (a task's WORKDIR over it),
// Run says so instead of failing to find the program; the control is the
// same program with the workspace at /app.
func TestRunRefusesAProgramTheWorkspaceCovers(t *testing.T) {
	need(t)
	root := hostDir(t)
	ws := filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ at, want string }{
		{filepath.Dir(agentPath), "where the episode's workspace is mounted"},
		{"/app", ""},
	} {
		cfg := baseConfig(t)
		cfg.Workspace, cfg.WorkspaceAt, cfg.Hide = ws, tc.at, []string{root}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		sb, err := sandbox.Start(ctx, cfg)
		if err != nil {
			cancel()
			t.Fatalf("start with the workspace at %s: %v", tc.at, err)
		}
		_, err = sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: []string{agentCommand}})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("control (workspace at %s): %v", tc.at, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("workspace at %s over the program: %v, want an error saying %q", tc.at, err, tc.want)
		}
		sb.Close()
		cancel()
	}
}

// The harness holds no capability in any set, with no_new_privs and the
// seccomp filter, in both id maps: with the single map it runs as uid 0
// inside, where only empty bounding, inheritable and ambient sets keep its
// execve from gaining every capability. The positive control is the init,
// read the same way: it holds capabilities and no filter.
func TestHarnessHoldsNoCapabilityInEitherIDMap(t *testing.T) {
	need(t)
	for _, ids := range []sandbox.IDMode{sandbox.IDRange, sandbox.IDSelf} {
		t.Run(string(ids), func(t *testing.T) {
			cfg := baseConfig(t)
			cfg.IDs, cfg.Seccomp = ids, true
			rn := start(t, cfg, nil, "term")
			rn.next(t)
			harness := procStatus(t, rn.sb.HarnessPid())
			for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if v := harness[set]; v != "0000000000000000" {
					t.Errorf("the harness's %s is %q, want empty", set, v)
				}
			}
			if harness["NoNewPrivs"] != "1" || harness["Seccomp"] != "2" {
				t.Errorf("the harness has NoNewPrivs %q, Seccomp %q: want 1 and 2 (filter)", harness["NoNewPrivs"], harness["Seccomp"])
			}
			if ids == sandbox.IDRange && harness["Groups"] != "" {
				t.Errorf("the harness keeps supplementary groups %q", harness["Groups"])
			}
			init := procStatus(t, rn.sb.Pid())
			if init["CapEff"] == "0000000000000000" || init["CapBnd"] == "0000000000000000" || init["Seccomp"] != "0" {
				t.Errorf("positive control: the init reads as CapEff %q, CapBnd %q, Seccomp %q; want capabilities and no filter", init["CapEff"], init["CapBnd"], init["Seccomp"])
			}
		})
	}
}

// procStatus reads /proc/PID/status as a map of field to value.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	if pid == 0 {
		t.Fatal("no such process (pid 0)")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// StopSpawners (the daemon's exit) kills the inits a spawner still has and
// reaps the spawner, whose CPU time, and its inits', is then the daemon's;
// a later Start starts a spawner again.
func TestStopSpawnersEndsTheirInitsAndReapsThem(t *testing.T) {
	need(t)
	rn := start(t, baseConfig(t), nil, "term")
	rn.next(t)
	st, ok := procfs.ReadStat(rn.sb.Pid())
	if !ok || st.PPID == os.Getpid() {
		t.Fatalf("the init's parent is %d: not a spawner", st.PPID)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", st.PPID)); err != nil {
		t.Fatalf("positive control: the spawner %d is not there before StopSpawners: %v", st.PPID, err)
	}
	sandbox.StopSpawners()
	if e := rn.wait(t); !e.InitDied {
		t.Fatalf("after StopSpawners the run ended %+v, want the init's death", e)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", st.PPID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the spawner %d is still there (unreaped?) after StopSpawners: %v", st.PPID, err)
	}
	next := start(t, baseConfig(t), nil, "term")
	if r := next.next(t); r.Value != "waiting" {
		t.Fatalf("after StopSpawners a new sandbox's agent said %+v", r)
	}
}
