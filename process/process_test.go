package process

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/procfs"
	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) {
	if code, ok := runHelper(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testbin.Cleanup()
		if code == 0 {
			if z := zombieChildren(); len(z) > 0 {
				os.Stderr.WriteString("zombie children left: " + strconv.Itoa(len(z)) + "\n")
				code = 1
			}
		}
		os.Exit(code)
	}))
}

// zombieChildren lists zombie children of the test process.
func zombieChildren() []procfs.Stat {
	self := os.Getpid()
	return procfs.Scan(func(s procfs.Stat) bool { return s.PPID == self && s.Dead() })
}

func newSup(t *testing.T, opts Options) *Supervisor {
	t.Helper()
	s, err := NewSupervisor(opts)
	if err != nil {
		t.Fatalf("NewSupervisor: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background(), 0); err != nil {
			t.Errorf("supervisor close: %v", err)
		}
	})
	return s
}

func agentSpec(t *testing.T, args ...string) Spec {
	return Spec{
		Name: "agent",
		Path: testbin.Path(t, "testharness"),
		Args: append([]string{"agent"}, args...),
		Env:  DefaultEnviron(nil),
	}
}

func isReady(b []byte) bool { return bytes.Contains(b, []byte(`"type":"ready"`)) }

func startReady(t *testing.T, s *Supervisor, spec Spec) *Process {
	t.Helper()
	p, err := s.Start(spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { p.Stop(context.Background(), 0) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.WaitReady(ctx, isReady); err != nil {
		t.Fatalf("wait ready: %v", err)
	}
	return p
}

// turn sends one message and collects stdout lines up to turn_complete.
func turn(t *testing.T, p *Process, msg string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	line := `{"type":"message","turn":1,"content":` + strconv.Quote(msg) + `}`
	if err := p.WriteLine(ctx, []byte(line)); err != nil {
		t.Fatalf("write: %v", err)
	}
	var got []string
	for {
		select {
		case l, ok := <-p.Lines():
			if !ok {
				t.Fatalf("stdout closed; got %q", got)
			}
			got = append(got, string(l.Text))
			if strings.Contains(string(l.Text), `"turn_complete"`) {
				return got
			}
		case <-ctx.Done():
			t.Fatalf("no turn_complete; got %q", got)
		}
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, ok := procfs.ReadStat(pid)
	return ok && !st.Dead()
}

func pidFrom(t *testing.T, lines []string, word string) int {
	t.Helper()
	for _, l := range lines {
		if i := strings.Index(l, word+" "); i >= 0 {
			rest := l[i+len(word)+1:]
			end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
			if end < 0 {
				end = len(rest)
			}
			if pid, err := strconv.Atoi(rest[:end]); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no %q pid in %q", word, lines)
	return 0
}

func TestReadyGatingAndTurn(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t, "--slow-start", "150ms"))
	got := turn(t, p, "hello")
	if !strings.Contains(strings.Join(got, "\n"), "echo: hello") {
		t.Fatalf("turn output %q lacks echo", got)
	}
	if p.OutputBytes() == 0 {
		t.Fatal("OutputBytes not counted")
	}
}

func TestWaitReadyReturnsEarlyOutput(t *testing.T) {
	s := newSup(t, Options{})
	p, err := s.Start(agentSpec(t, "--noisy-start"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), 0)
	early, err := p.WaitReady(context.Background(), isReady)
	if err != nil {
		t.Fatal(err)
	}
	if len(early) != 1 || !strings.Contains(string(early[0]), "not JSON") {
		t.Fatalf("early output = %q, want the banner line", early)
	}
}

func TestStartupTimeout(t *testing.T) {
	s := newSup(t, Options{})
	p, err := s.Start(agentSpec(t, "--never-ready", "--stderr", "warming up"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = p.WaitReady(ctx, isReady)
	var se *StartError
	if !errors.As(err, &se) || se.Reason != FailTimeout {
		t.Fatalf("err = %v, want timeout StartError", err)
	}
	if !strings.Contains(se.StderrTail, "warming up") || !strings.Contains(err.Error(), "warming up") {
		t.Fatalf("stderr tail missing from %q", err)
	}
	if p.Alive() {
		t.Fatal("process still alive after start-up timeout")
	}
	<-p.Stopped()
}

func TestCrashBeforeReady(t *testing.T) {
	s := newSup(t, Options{})
	p, err := s.Start(agentSpec(t, "--crash-on-start", "3", "--stderr", "dying"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.WaitReady(context.Background(), isReady)
	var se *StartError
	if !errors.As(err, &se) || se.Reason != FailExited {
		t.Fatalf("err = %v, want exited StartError", err)
	}
	if se.Exit == nil || se.Exit.Code != 3 {
		t.Fatalf("exit = %+v, want code 3", se.Exit)
	}
	if !strings.Contains(se.StderrTail, "dying") || !strings.Contains(err.Error(), "exited with code 3") {
		t.Fatalf("error %q lacks exit code or stderr", err)
	}
}

func TestSpawnFailure(t *testing.T) {
	s := newSup(t, Options{})
	_, err := s.Start(Spec{Path: "/nonexistent/harness", Env: DefaultEnviron(nil)})
	var se *StartError
	if !errors.As(err, &se) || se.Reason != FailSpawn {
		t.Fatalf("err = %v, want spawn StartError", err)
	}
	if !strings.Contains(err.Error(), "failed to spawn") {
		t.Fatalf("message %q", err)
	}
	if s.Live() != 0 {
		t.Fatalf("failed start still tracked")
	}
}

func TestStderrTailBounded(t *testing.T) {
	s := newSup(t, Options{})
	p, err := s.Start(Spec{
		Path: "sh", Args: []string{"-c", `i=0; while [ $i -lt 500 ]; do i=$((i+1)); echo "line$i" >&2; done`},
		Env: DefaultEnviron(nil), StderrTailLines: 20, StderrTailBytes: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait(context.Background())
	p.Stop(context.Background(), time.Second)
	tail := p.StderrTail()
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	if len(tail) > 100 || len(lines) > 20 {
		t.Fatalf("tail not bounded: %d bytes, %d lines", len(tail), len(lines))
	}
	if lines[len(lines)-1] != "line500" {
		t.Fatalf("tail does not end with the last line: %q", tail)
	}
}

func TestOverlongLine(t *testing.T) {
	s := newSup(t, Options{})
	spec := agentSpec(t)
	spec.MaxLineBytes = 1 << 20
	p := startReady(t, s, spec)
	ctx := context.Background()
	p.WriteLine(ctx, []byte(`{"type":"message","turn":1,"content":"longline 5M;;reply after"}`))
	var sawLong, sawAfter bool
	for l := range p.Lines() {
		if l.TooLong {
			sawLong = true
			if l.Size != 5<<20 || len(l.Text) > maxTooLongPrefix {
				t.Fatalf("too-long line: size %d, kept %d", l.Size, len(l.Text))
			}
			continue
		}
		if strings.Contains(string(l.Text), `"text":"after"`) {
			sawAfter = true
		}
		if strings.Contains(string(l.Text), "turn_complete") {
			break
		}
	}
	if !sawLong || !sawAfter {
		t.Fatalf("sawLong=%v sawAfter=%v", sawLong, sawAfter)
	}
}

func TestStopEscalatesForSIGTERMIgnoringChild(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t, "--ignore-term"))
	if err := p.Stop(context.Background(), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	st, ok := p.ExitStatus()
	if !ok || st.Signal != "SIGKILL" {
		t.Fatalf("exit = %+v, want killed by SIGKILL after grace", st)
	}
}

func TestStopGracefulChildGetsSIGTERM(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t))
	if err := p.Stop(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.ExitStatus(); st.Signal != "SIGTERM" {
		t.Fatalf("exit = %+v, want SIGTERM", st)
	}
}

func TestGrandchildrenInGroupKilled(t *testing.T) {
	s := newSup(t, Options{Cgroup: ModeOff})
	p := startReady(t, s, agentSpec(t))
	pid := pidFrom(t, turn(t, p, "spawn ignore-term"), "spawned")
	if !alive(pid) {
		t.Fatal("grandchild not running")
	}
	p.Stop(context.Background(), 50*time.Millisecond)
	if alive(pid) {
		t.Fatalf("grandchild %d survived Stop", pid)
	}
}

// TestEscapeesKilled runs a setsid escapee (parent alive) and an orphaned
// setsid escapee (parent gone) under each kill mechanism this machine has.
func TestEscapeesKilled(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		need func(Mechanisms) bool
	}{
		{"cgroup", Options{Cgroup: ModeRequired, Subreaper: ModeOff}, func(m Mechanisms) bool { return m.Cgroup }},
		{"subreaper", Options{Cgroup: ModeOff, Subreaper: ModeRequired}, func(m Mechanisms) bool { return m.Subreaper }},
		{"marker-only", Options{Cgroup: ModeOff, Subreaper: ModeOff}, func(Mechanisms) bool { return true }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewSupervisor(c.opts)
			if err != nil {
				testbin.Missing(t, "mechanism %s not available on this machine: %v", c.name, err)
			}
			defer s.Close(context.Background(), 0)
			if c.opts.Subreaper == ModeOff {
				// The subreaper bit is process-wide; clear it for this case.
				unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
				defer enableSubreaper()
			}
			m := s.Mechanisms()
			if !c.need(m) {
				testbin.Missing(t, "mechanism %s not available: %v", c.name, m.Notes)
			}
			p := startReady(t, s, agentSpec(t))
			t.Logf("kill mechanism exercised: %s (supervisor: %s)", p.KillMode(), m.KillMode())
			escaped := pidFrom(t, turn(t, p, "escape"), "escaped")
			orphaned := pidFrom(t, turn(t, p, "orphan"), "orphaned")
			for _, pid := range []int{escaped, orphaned} {
				if st, ok := procfs.ReadStat(pid); !ok || st.SID == p.Pid() || st.PGID == p.Pid() {
					t.Fatalf("pid %d did not leave the group/session: %+v", pid, st)
				}
			}
			if err := p.Stop(context.Background(), 50*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			for _, pid := range []int{escaped, orphaned} {
				if alive(pid) {
					t.Errorf("escapee %d survived Stop (%s)", pid, p.KillMode())
				}
			}
		})
	}
}

func TestStopIdempotentAndConcurrent(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t, "--ignore-term"))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Stop(context.Background(), 20*time.Millisecond); err != nil {
				t.Errorf("stop: %v", err)
			}
		}()
	}
	wg.Wait()
	if err := p.Stop(context.Background(), 0); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if p.Alive() || s.Live() != 0 {
		t.Fatal("process alive or still tracked after Stop")
	}
}

func TestStopContextExpires(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t, "--ignore-term"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := p.Stop(ctx, 2*time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded while grace runs", err)
	}
	if err := p.Stop(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if p.Alive() {
		t.Fatal("alive after stop finished")
	}
}

func TestWriteAfterExit(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t))
	ctx := context.Background()
	p.WriteLine(ctx, []byte(`{"type":"message","turn":1,"content":"crash 7"}`))
	st, _ := p.Wait(ctx)
	if st.Code != 7 {
		t.Fatalf("exit = %+v, want 7", st)
	}
	// The pipe's read end closes with the child; writes now fail.
	var err error
	for range 100 {
		if err = p.WriteLine(ctx, []byte("x")); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrNotRunning) {
		t.Fatalf("write after exit: %v, want ErrNotRunning", err)
	}
	if !strings.Contains(p.StderrTail(), "crashing with code 7") {
		t.Fatalf("stderr tail %q", p.StderrTail())
	}
}

func TestWriteHonoursContext(t *testing.T) {
	s := newSup(t, Options{})
	p, err := s.Start(Spec{Path: "sleep", Args: []string{"10"}, Env: DefaultEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	big := bytes.Repeat([]byte("z"), 4<<20) // more than a pipe holds
	if err := p.Write(ctx, big); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
}

func TestEnvironmentIsExplicit(t *testing.T) {
	t.Setenv("HARNESSD_TEST_SECRET", "s3cret")
	env := Environ(os.Environ(), []string{"PATH"}, map[string]string{"GIVEN": "yes"})
	for _, kv := range env {
		if strings.HasPrefix(kv, "HARNESSD_TEST_SECRET=") {
			t.Fatal("secret passed through the allowlist")
		}
	}
	s := newSup(t, Options{})
	spec := agentSpec(t)
	spec.Env = env
	p := startReady(t, s, spec)
	out := strings.Join(turn(t, p, "env HARNESSD_TEST_SECRET;;env GIVEN"), "\n")
	if !strings.Contains(out, "HARNESSD_TEST_SECRET=<unset>") || !strings.Contains(out, "GIVEN=yes") {
		t.Fatalf("child environment wrong: %s", out)
	}
}

func TestPTYSessionAndJobControlKilled(t *testing.T) {
	s := newSup(t, Options{Cgroup: ModeOff})
	if !s.Mechanisms().PTY {
		testbin.Missing(t, "no pseudo-terminals on this machine")
	}
	spec := Spec{Name: "bash", Path: "bash", Args: []string{"--norc", "--noprofile", "-i"},
		Env: DefaultEnviron(map[string]string{"PS1": "READY> ", "TERM": "dumb"}), PTY: &PTY{Rows: 24, Cols: 80}}
	p, err := s.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.WaitReady(ctx, func(b []byte) bool { return bytes.Contains(b, []byte("READY> ")) }); err != nil {
		t.Fatal(err)
	}
	p.Write(ctx, []byte("sleep 1001 & echo JOB=$!; echo MARK-$((6*7))\n"))
	var out []byte
	for !bytes.Contains(out, []byte("MARK-42")) {
		select {
		case c, ok := <-p.Output():
			if !ok {
				t.Fatalf("terminal closed: %q", out)
			}
			out = append(out, c...)
		case <-ctx.Done():
			t.Fatalf("no MARK-42 in %q", out)
		}
	}
	m := regexp.MustCompile(`JOB=(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no job pid in %q", out)
	}
	job, _ := strconv.Atoi(string(m[1]))
	st, ok := procfs.ReadStat(job)
	if !ok || st.PGID == p.Pid() {
		t.Fatalf("background job %d not in its own group: %+v", job, st)
	}
	if err := p.Stop(context.Background(), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if alive(job) || p.Alive() {
		t.Fatalf("session member survived: job alive=%v shell alive=%v", alive(job), p.Alive())
	}
}

func TestNoFDLeak(t *testing.T) {
	s := newSup(t, Options{})
	cycle := func() {
		p := startReady(t, s, agentSpec(t))
		turn(t, p, "spawn")
		p.Stop(context.Background(), time.Second)
	}
	cycle() // warm up lazily created runtime descriptors
	before := countFDs(t)
	for range 3 {
		cycle()
	}
	if after := countFDs(t); after != before {
		t.Fatalf("open fds %d -> %d", before, after)
	}
	if z := zombieChildren(); len(z) != 0 {
		t.Fatalf("zombie children: %+v", z)
	}
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestSupervisorsShareNoCgroupDirectory: two supervisors with the same pid
// (as two containerised daemons are both PID 1 of their namespaces) each get
// their own cgroup directory, and creating the second leaves the first's
// trees alone.
func TestSupervisorsShareNoCgroupDirectory(t *testing.T) {
	s1, err := NewSupervisor(Options{Cgroup: ModeRequired, Subreaper: ModeOff})
	if err != nil {
		testbin.Missing(t, "cgroup v2 not available on this machine: %v", err)
	}
	defer s1.Close(context.Background(), 0)
	p := startReady(t, s1, agentSpec(t))
	if p.KillMode() != "cgroup" {
		testbin.Missing(t, "tree not placed in a cgroup (%s)", p.KillMode())
	}
	s2 := newSup(t, Options{Cgroup: ModeRequired, Subreaper: ModeOff})
	d1, d2 := s1.Mechanisms().CgroupPath, s2.Mechanisms().CgroupPath
	if d1 == d2 {
		t.Fatalf("both supervisors use %s", d1)
	}
	if !p.Alive() {
		t.Fatal("creating a second supervisor killed the first one's tree")
	}
	if _, err := os.Stat(d1); err != nil {
		t.Fatalf("first supervisor's cgroup directory: %v", err)
	}
	turn(t, p, "reply still here")
}

// TestKillCutsGraceShort: Kill ends a tree whose Stop is waiting out a long
// grace for a child that ignores SIGTERM, so the Stop returns at once.
func TestKillCutsGraceShort(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t, "--ignore-term"))
	member := pidFrom(t, turn(t, p, "spawn ignore-term"), "spawned")
	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop(context.Background(), time.Hour) }()
	// Kill only signals trees it still tracks; the Stop above is in its
	// grace period as soon as the leader has had SIGTERM (which it ignores).
	if n := s.Kill(); n != 1 {
		t.Fatalf("Kill signalled %d trees, want 1", n)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop still waiting for its grace after Kill")
	}
	if alive(member) || p.Alive() {
		t.Fatal("tree survived Kill")
	}
	if n := s.Kill(); n != 0 {
		t.Fatalf("Kill after the stop signalled %d trees", n)
	}
}

// TestProbeCgroupLeavesNothing: ProbeCgroup reports the directory a
// supervisor would use and removes its scratch cgroup.
func TestProbeCgroupLeavesNothing(t *testing.T) {
	info := ProbeCgroup("")
	t.Logf("%+v", info)
	if info.Root == "" {
		if info.Error == "" {
			t.Fatal("no root and no error")
		}
		testbin.Missing(t, "no cgroup v2 here: %s", info.Error)
	}
	entries, err := os.ReadDir(info.Root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "harnessd-probe-"+strconv.Itoa(os.Getpid())+"-") {
			t.Errorf("scratch cgroup left behind: %s", e.Name())
		}
	}
	s, err := NewSupervisor(Options{Cgroup: ModeRequired, Subreaper: ModeOff})
	if (err == nil) != (info.Writable && info.Kill) {
		t.Fatalf("ProbeCgroup says writable=%v kill=%v (%s) but NewSupervisor: %v", info.Writable, info.Kill, info.Error, err)
	}
	if s != nil {
		if got := filepath.Dir(s.Mechanisms().CgroupPath); got != info.Root {
			t.Errorf("supervisor directory is under %s, probe said %s", got, info.Root)
		}
		s.Close(context.Background(), 0)
	}
	bad := ProbeCgroup(t.TempDir())
	if bad.Error == "" || bad.Writable {
		t.Errorf("a plain directory passed as a cgroup: %+v", bad)
	}
}

// TestCloseTwiceConcurrently: Close may be called from several goroutines
// (a drain and a forced exit); each returns once the trees are gone.
func TestCloseTwiceConcurrently(t *testing.T) {
	s, err := NewSupervisor(Options{ReapOrphans: true})
	if err != nil {
		t.Fatal(err)
	}
	p := startReady(t, s, agentSpec(t, "--ignore-term"))
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { errs <- s.Close(context.Background(), 50*time.Millisecond) }()
	}
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if p.Alive() || s.Live() != 0 {
		t.Fatalf("after Close: alive %v, live trees %d", p.Alive(), s.Live())
	}
}
