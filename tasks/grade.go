package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/process/sandbox"
)

// TailBytes is how much of the tests' stdout and stderr a Result keeps
// (the end of each).
const TailBytes = 8 << 10

// DefaultSolveTimeout bounds the oracle when the task gives no
// [agent] timeout_sec.
const DefaultSolveTimeout = 600 * time.Second

// sandboxPath is the PATH of the tests and the oracle.
const sandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// RunOptions say where Grade and Solve run.
type RunOptions struct {
	// Workspace is the episode's workspace on the host, mounted read-write
	// at the task's WorkDir.
	Workspace string
	// Scratch is a private host directory for the run's copy of tests/
	// (or solution/), its /logs and HOME; it must not exist yet or be
	// empty. The caller removes it.
	Scratch string
	// Hide are further host paths covered inside (the daemon's directories,
	// other sessions' workspaces); the taskset's own are always hidden.
	Hide []string
	// Init is the sandbox's init binary ("" means /proc/self/exe, which
	// must call sandbox.Init first thing).
	Init string
	// Limits bound the run's sandbox: the harness's own limits, the task's
	// memory and CPUs over them; a limit left zero is DefaultLimits'.
	Limits sandbox.Limits

	leaderShells map[string]string // Grade: shell name -> its execute-only copy inside
}

// DefaultLimits bound a grading or solving sandbox where neither the
// environment's limits nor the task set one: the run always has a cgroup
// of its own (never the daemon's), a memory limit that holds and a
// bounded number of tasks.
var DefaultLimits = sandbox.Limits{MemoryBytes: 2 << 30, Pids: 1024}

// limits merges o's limits, the task's and DefaultLimits.
func (t *Task) limits(o RunOptions) sandbox.Limits {
	l := o.Limits
	if m := t.Limits.MemoryBytes(); m > 0 {
		l.MemoryBytes = m
	}
	if c := t.Limits.CPUs; c > 0 {
		l.CPU = c
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultLimits.MemoryBytes
	}
	if l.Pids == 0 {
		l.Pids = DefaultLimits.Pids
	}
	if l.CPU == 0 {
		l.CPU = DefaultLimits.CPU
	}
	return l
}

// Result is how a run of a task's tests (or oracle) ended.
type Result struct {
	// Reward is the reward the tests wrote (nil when they wrote none that
	// could be read; Error says why).
	Reward *float64 `json:"reward"`
	// Scores are reward.json's named scores, when the tests wrote one.
	Scores map[string]float64 `json:"scores,omitempty"`
	// ExitCode is the exit code, -1 when killed by a signal (Signal).
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// TimedOut says the run exceeded its timeout and was killed.
	TimedOut bool `json:"timed_out,omitempty"`
	// Limit names the cgroup limit the run ran into (memory, pids).
	Limit string `json:"limit,omitempty"`
	// Stdout and Stderr are the ends of the run's output (TailBytes each).
	Stdout string `json:"stdout_tail,omitempty"`
	Stderr string `json:"stderr_tail,omitempty"`
	// Duration is how long the run took.
	Duration time.Duration `json:"duration"`
	// Error says why there is no reward.
	Error string `json:"error,omitempty"`
	// Tampered lists the processes other than the tests' own leader that
	// wrote the reward file: the reward is then withheld (Reward nil).
	Tampered []Writer `json:"tampered,omitempty"`
	// RewardWatch says how the reward file's writers were watched:
	// "fanotify", or "off: " and why (the reward is then unverified).
	RewardWatch string `json:"reward_watch,omitempty"`

	leader int          // the tests' leader's host pid
	watch  *rewardWatch // the verifier mount's writers (Grade)
}

// Grade runs the task's tests against workspace: tests/ is copied into
// the scratch directory and bound read-only at /tests, /logs/verifier (and
// /logs/agent) are writable, the workspace is at WorkDir, and
// `bash /tests/test.sh` (or a JSONL task's grader) runs there as root of
// the sandbox's user namespace (an unprivileged host id), with the task's
// ENV and [verifier] env, the task's cgroup limits, no network but
// loopback, and [verifier] timeout_sec. The reward is
// /logs/verifier/reward.txt (one number) or reward.json ("reward", else the
// mean of its numbers); a JSONL task without a reward file scores its
// grader's exit status (0: 1.0, otherwise 0.0).
//
// Grade must only be called once the harness has stopped. Its error is for
// runs that could not happen (no sandbox on this host, a broken scratch
// directory); tests that fail, time out or write no reward are a Result.
func (t *Task) Grade(ctx context.Context, o RunOptions) (*Result, error) {
	if t.testsDir == "" && t.grader == nil {
		return nil, fmt.Errorf("task %s has no tests", t.ID)
	}
	logs, err := makeScratch(o.Scratch)
	if err != nil {
		return nil, err
	}
	var binds []sandbox.Bind
	if t.testsDir != "" {
		tests := filepath.Join(o.Scratch, "tests")
		if err := copyReadable(t.testsDir, tests); err != nil {
			return nil, fmt.Errorf("task %s: copy tests: %w", t.ID, err)
		}
		binds = append(binds, sandbox.Bind{Src: tests, Dst: "/tests"})
	}
	// /logs/verifier is a mount of its own: nothing is linked or renamed
	// into it from the rest of /logs, and the reward watch marks it.
	binds = append(binds, sandbox.Bind{Src: logs, Dst: "/logs", Writable: true},
		sandbox.Bind{Src: filepath.Join(logs, "verifier"), Dst: "/logs/verifier", Writable: true})
	if shells, err := leaderShells(filepath.Join(o.Scratch, "shells")); err == nil {
		binds = append(binds, sandbox.Bind{Src: filepath.Join(o.Scratch, "shells"), Dst: leaderShellDir})
		o.leaderShells = shells
	}
	cmd := t.grader
	if cmd == nil {
		cmd = []string{"bash", "/tests/test.sh"}
	}
	env := append(append([]string(nil), t.Env...), t.VerifierEnv...)
	res, err := t.run(ctx, o, binds, cmd, env, t.VerifierTimeout, true)
	if err != nil {
		return nil, err
	}
	verifier := filepath.Join(logs, "verifier")
	readReward(verifier, res)
	checkWriters(verifier, res)
	if res.Reward == nil && res.Error == "" {
		if t.exitReward && !res.TimedOut && res.Signal == "" {
			r := 0.0
			if res.ExitCode == 0 {
				r = 1
			}
			res.Reward = &r
		} else {
			res.Error = "the tests wrote no reward (/logs/verifier/reward.txt or reward.json)"
		}
	}
	if res.TimedOut {
		res.Error = strings.TrimPrefix(strings.Join([]string{res.Error, fmt.Sprintf("the tests exceeded %s", t.VerifierTimeout)}, "; "), "; ")
	}
	return res, nil
}

// Solve runs the task's reference solution (solution/solve.sh, bound
// read-only at /solution) against workspace, in the same kind of sandbox
// as Grade, with [agent] timeout_sec (DefaultSolveTimeout without one).
func (t *Task) Solve(ctx context.Context, o RunOptions) (*Result, error) {
	if t.solutionDir == "" {
		return nil, fmt.Errorf("task %s has no solution/solve.sh", t.ID)
	}
	logs, err := makeScratch(o.Scratch)
	if err != nil {
		return nil, err
	}
	sol := filepath.Join(o.Scratch, "solution")
	if err := copyReadable(t.solutionDir, sol); err != nil {
		return nil, fmt.Errorf("task %s: copy solution: %w", t.ID, err)
	}
	binds := []sandbox.Bind{{Src: sol, Dst: "/solution"}, {Src: logs, Dst: "/logs", Writable: true}}
	d := t.AgentTimeout
	if d <= 0 {
		d = DefaultSolveTimeout
	}
	env := append(append([]string(nil), t.Env...), t.SolutionEnv...)
	return t.run(ctx, o, binds, []string{"bash", "/solution/solve.sh"}, env, d, false)
}

// makeScratch creates the scratch directory with logs/verifier and
// logs/agent, writable by the sandbox's ids, and returns logs.
func makeScratch(dir string) (string, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("scratch directory %q is not absolute", dir)
	}
	logs := filepath.Join(dir, "logs")
	for _, d := range []string{dir, filepath.Join(dir, "home"), logs, filepath.Join(logs, "verifier"), filepath.Join(logs, "agent")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("scratch directory: %w", err)
		}
	}
	for _, d := range []string{logs, filepath.Join(logs, "verifier"), filepath.Join(logs, "agent")} {
		if err := os.Chmod(d, 0o777); err != nil {
			return "", fmt.Errorf("scratch directory: %w", err)
		}
	}
	return logs, nil
}

// copyReadable copies src to dst and makes everything readable (and
// directories searchable) by any id, as the sandbox's ids are not ours.
func copyReadable(src, dst string) error {
	if err := copyDir(src, dst); err != nil {
		return err
	}
	return filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return err
		}
		mode := fi.Mode().Perm() | 0o444
		if fi.IsDir() || fi.Mode()&0o100 != 0 {
			mode |= 0o111
		}
		return os.Chmod(p, mode)
	})
}

// holdScript keeps the run's leader from running cmd until the daemon
// has its pid (one line on stdin), then becomes cmd (same pid).
const holdScript = `read -r go || exit 126; exec "$@"`

// run starts a sandbox with the workspace at WorkDir and binds, runs cmd
// until it exits or timeout passes, and reports how it ended. With guard,
// the sandbox's /logs/verifier mount is watched (watch.go) and cmd's
// leader is held until its pid is known.
func (t *Task) run(ctx context.Context, o RunOptions, binds []sandbox.Bind, cmd, env []string, timeout time.Duration, guard bool) (*Result, error) {
	start := time.Now()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	var wg sync.WaitGroup
	stdout, stderr := &tail{max: TailBytes}, &tail{max: TailBytes}
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(stdout, outR); outR.Close() }()
	go func() { defer wg.Done(); io.Copy(stderr, errR); errR.Close() }()
	root := uid0()
	home := filepath.Join(o.Scratch, "home")
	// The workspace and HOME are binds rather than Config.Workspace and
	// Home: those also appear at their host paths, whose parents (the
	// daemon's private directories) the sandbox's ids cannot search.
	binds = append([]sandbox.Bind{{Src: o.Workspace, Dst: t.WorkDir, Writable: true}, {Src: home, Dst: "/root", Writable: true}}, binds...)
	cfg := sandbox.Config{
		Init: o.Init, Name: "task-" + t.ID, Hostname: "task",
		Hide:  hideOutside(append(append([]string(nil), o.Hide...), t.hidden...), t.WorkDir),
		Binds: binds, UID: root, GID: root,
		// The harness's restrictions: the seccomp filter, a cgroup of its
		// own with memory, pids and CPU bounds, no network but loopback.
		Seccomp: true,
		Limits:  t.limits(o),
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	sb, err := sandbox.Start(sctx, cfg)
	cancel()
	if err != nil {
		outW.Close()
		errW.Close()
		wg.Wait()
		return nil, fmt.Errorf("task %s: start the grading sandbox: %w", t.ID, err)
	}
	defer sb.Close()
	uid, gid := sb.HostIDs()
	for _, d := range []string{o.Workspace, home} {
		if err := chownTree(d, uid, gid); err != nil {
			return nil, fmt.Errorf("task %s: give %s to the sandbox: %w", t.ID, d, err)
		}
	}
	fullEnv := append([]string{"PATH=" + sandboxPath, "HOME=/root", "LANG=C.UTF-8", "TERM=dumb"}, env...)
	res := &Result{}
	var inR, inW *os.File
	run := sandbox.Command{Path: cmd[0], Args: cmd[1:], Env: fullEnv, Dir: t.WorkDir, Stdout: outW, Stderr: errW}
	if guard {
		// The leader's shell is an execute-only copy (leaderShell): the
		// tests' leader is then not dumpable, and the code under test,
		// its child with its uid, cannot write its memory through
		// /proc/PID/mem (ptrace itself is denied by seccomp).
		if sh, ok := o.leaderShells[cmd[0]]; ok {
			cmd = append([]string{sh}, cmd[1:]...)
		}
		w, err := watchVerifier(fmt.Sprintf("/proc/%d/root/logs/verifier", sb.Pid()))
		if err != nil {
			res.RewardWatch = "off: " + err.Error()
		} else {
			res.RewardWatch, res.watch = "fanotify", w
			defer w.stop() // after sb.Close, deferred before it ran
			if inR, inW, err = os.Pipe(); err != nil {
				return nil, err
			}
			defer inW.Close()
			run.Path, run.Args = "/bin/sh", append([]string{"-c", holdScript, "harnessd-grade"}, cmd...)
			run.Stdin = inR
		}
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The run's stdio goes with its command: the pipes close when the run
	// ends (every process it left is killed), not when the sandbox does.
	_, err = sb.Run(rctx, run)
	outW.Close()
	errW.Close()
	if inR != nil {
		inR.Close()
	}
	if err == nil && inW != nil {
		// The leader waits on its stdin: its pid is certain now.
		if res.leader = sb.HarnessPid(); res.leader == 0 {
			err = errors.New("the tests' leader has no pid")
		} else if _, err = inW.Write([]byte("go\n")); err == nil {
			err = inW.Close()
		}
	}
	if err != nil {
		sb.Close()
		wg.Wait()
		return nil, fmt.Errorf("task %s: run %s in the sandbox: %w", t.ID, strings.Join(cmd, " "), err)
	}
	exit, err := sb.Wait(rctx)
	if err != nil {
		res.TimedOut = ctx.Err() == nil
		sb.Close()
		exit, _ = sb.Wait(context.Background())
		if ctx.Err() != nil {
			wg.Wait()
			return nil, fmt.Errorf("task %s: %s abandoned: %w", t.ID, strings.Join(cmd, " "), ctx.Err())
		}
	}
	wg.Wait()
	// Every process of the sandbox is gone once it is closed: the watch
	// then holds every write they made.
	sb.Close()
	if res.watch != nil {
		res.watch.stop()
	}
	res.ExitCode, res.Signal, res.Limit = exit.Status.Code, exit.Status.Signal, exit.Limit
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	res.Duration = time.Since(start)
	return res, nil
}

// hideOutside drops the paths below workDir: the workspace is bound over
// workDir, which covers them, and the sandbox cannot hide below a bind.
func hideOutside(paths []string, workDir string) []string {
	var out []string
	for _, p := range paths {
		if !within(filepath.Clean(p), workDir) {
			out = append(out, p)
		}
	}
	return out
}

func uid0() *int { z := 0; return &z }

// chownTree gives dir and everything in it to uid:gid (not following
// symlinks), so that the sandbox's root may write there.
func chownTree(dir string, uid, gid int) error {
	if os.Geteuid() != 0 {
		return nil // the single id map: the sandbox's root is our own uid
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "\uFFFD")
}
