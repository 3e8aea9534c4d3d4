package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/internal/beneath"
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

	// Step is the step of a multi-step task to solve, set up or grade
	// (1-based); 0 for a single-step task.
	Step int
	// Egress, when set, is the egress proxy the grader may use: the
	// environment's egress policy (its Policy.Allow are the hosts). Grade
	// opens a door for it in the grading sandbox and sets HTTP(S)_PROXY
	// only when the task's verifier network policy allows the network
	// (Task.VerifierNetwork); an allowlist there narrows the hosts.
	Egress *egress.Options

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
	// ErrorType classifies a missing reward that is not the agent's doing:
	// FailureGraderNeedsNetwork ("" otherwise).
	ErrorType string `json:"error_type,omitempty"`
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
// `bash /tests/test.sh` (or a JSONL task's grader) runs there as the
// task's [verifier] user (root of the sandbox's user namespace, an
// unprivileged host id, by default), with the task's ENV, [environment]
// env and [verifier] env, the task's cgroup limits, no network but
// loopback (or the egress proxy: RunOptions.Egress), and [verifier]
// timeout_sec. The reward is /logs/verifier/reward.txt (one number) or
// reward.json ("reward", else the mean of its numbers); a JSONL task
// without a reward file scores its grader's exit status (0: 1.0,
// otherwise 0.0).
//
// A multi-step task grades one step (RunOptions.Step): the task-level
// tests/ first, the step's own tests/ over it, the step's timeout, env
// and user over the task's. A separate verifier ([verifier]
// environment_mode = "separate") sees a fresh workspace holding only the
// declared artifacts copied from the agent's.
//
// Tests that need the network to install their tools and could not reach
// it end with Result.ErrorType FailureGraderNeedsNetwork and no reward
// (netcheck.go), not with the 0 such a test.sh writes.
//
// Grade must only be called once the harness has stopped. Its error is for
// runs that could not happen (no sandbox on this host, a broken scratch
// directory, a user this host cannot honour); tests that fail, time out or
// write no reward are a Result.
func (t *Task) Grade(ctx context.Context, o RunOptions) (*Result, error) {
	if t.testsDir == "" && t.grader == nil && !t.IsMultiStep() {
		return nil, fmt.Errorf("task %s has no tests", t.ID)
	}
	step, err := t.optStep(o.Step)
	if err != nil {
		return nil, err
	}
	logs, err := makeScratch(o.Scratch)
	if err != nil {
		return nil, err
	}
	var binds []sandbox.Bind
	var testDirs []string
	if t.testsDir != "" {
		testDirs = append(testDirs, t.testsDir)
	}
	if step != nil && step.testsDir != "" {
		testDirs = append(testDirs, step.testsDir)
	}
	if len(testDirs) > 0 {
		tests := filepath.Join(o.Scratch, "tests")
		for _, d := range testDirs {
			// The step's files are copied after the task's: same-named
			// files (its test.sh) win, as Harbor uploads them.
			if err := copyReadable(d, tests); err != nil {
				return nil, fmt.Errorf("task %s: copy tests: %w", t.ID, err)
			}
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
	env := mergeEnv(t.Env, t.VerifierEnv)
	if t.Separate {
		env = mergeEnv(t.separateEnv, t.VerifierEnv)
	}
	timeout, user, key := t.VerifierTimeout, t.VerifierUser, "verifier.user"
	if step != nil {
		env = mergeEnv(env, step.VerifierEnv)
		if step.VerifierTimeout > 0 {
			timeout = step.VerifierTimeout
		}
		if step.VerifierUser != nil {
			user, key = step.VerifierUser, fmt.Sprintf("steps[%q].verifier.user", step.Name)
		}
	}
	if err := canHonour(key, user); err != nil {
		return nil, err
	}
	if t.Separate {
		ws := filepath.Join(o.Scratch, "verifier-workspace")
		if err := t.transferArtifacts(o.Workspace, ws, step); err != nil {
			return nil, err
		}
		o.Workspace = ws
		if m := t.VerifierLimits.MemoryBytes(); m > 0 {
			o.Limits.MemoryBytes = m
		}
		if c := t.VerifierLimits.CPUs; c > 0 {
			o.Limits.CPU = c
		}
	}
	var egressOpts *egress.Options
	if o.Egress != nil && t.VerifierNetwork.Allows() {
		egressOpts = o.Egress
	}
	res, err := t.run(ctx, o, runSpec{binds: binds, cmd: cmd, env: env, timeout: timeout, guard: true, user: user, egress: egressOpts})
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
		res.Error = strings.TrimPrefix(strings.Join([]string{res.Error, fmt.Sprintf("the tests exceeded %s", timeout)}, "; "), "; ")
	}
	t.checkNetwork(filepath.Join(o.Scratch, "tests"), res, egressOpts != nil)
	return res, nil
}

// optStep is the step RunOptions.Step names (nil for a single-step task).
func (t *Task) optStep(n int) (*Step, error) {
	switch {
	case !t.IsMultiStep() && n == 0:
		return nil, nil
	case !t.IsMultiStep():
		return nil, fmt.Errorf("task %s has no [[steps]]: no step %d", t.ID, n)
	case n == 0:
		return nil, fmt.Errorf("task %s has %d steps: say which (RunOptions.Step)", t.ID, len(t.Steps))
	}
	return t.stepAt(n)
}

// transferArtifacts fills a separate verifier's fresh workspace ws with
// the declared artifacts (the task's and the step's) found in the agent's
// workspace, at the same paths.
func (t *Task) transferArtifacts(agentWS, ws string, step *Step) error {
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return fmt.Errorf("task %s: separate verifier workspace: %w", t.ID, err)
	}
	arts := append([]string(nil), t.Artifacts...)
	if step != nil {
		arts = append(arts, step.Artifacts...)
	}
	// The agent's workspace may be live (a step before the last):
	// everything is read beneath it (copyArtifact).
	root, err := os.OpenRoot(agentWS)
	if err != nil {
		return fmt.Errorf("task %s: the agent's workspace: %w", t.ID, err)
	}
	defer root.Close()
	dst, err := os.OpenRoot(ws)
	if err != nil {
		return fmt.Errorf("task %s: separate verifier workspace: %w", t.ID, err)
	}
	defer dst.Close()
	for _, a := range arts {
		rel, err := artifactPath(strings.TrimPrefix(a, t.WorkDir))
		if err != nil {
			continue // not inside: not transferred, as in Harbor
		}
		if err := copyArtifact(root, rel, dst); err != nil {
			return fmt.Errorf("task %s: transfer artifact %s: %w", t.ID, a, err)
		}
	}
	return nil
}

// Solve runs the task's reference solution (solution/solve.sh, bound
// read-only at /solution) against workspace, in the same kind of sandbox
// as Grade, as the task's [agent] user (Harbor's oracle runs as the
// agent's user, in the workdir), with [agent] timeout_sec
// (DefaultSolveTimeout without one). A multi-step task solves one step
// (RunOptions.Step: steps/NAME/solution/solve.sh).
func (t *Task) Solve(ctx context.Context, o RunOptions) (*Result, error) {
	step, err := t.optStep(o.Step)
	if err != nil {
		return nil, err
	}
	dir := t.solutionDir
	if step != nil {
		dir = step.solutionDir
	}
	if dir == "" {
		return nil, fmt.Errorf("task %s has no solution/solve.sh", t.ID)
	}
	logs, err := makeScratch(o.Scratch)
	if err != nil {
		return nil, err
	}
	sol := filepath.Join(o.Scratch, "solution")
	if err := copyReadable(dir, sol); err != nil {
		return nil, fmt.Errorf("task %s: copy solution: %w", t.ID, err)
	}
	binds := []sandbox.Bind{{Src: sol, Dst: "/solution"}, {Src: logs, Dst: "/logs", Writable: true}}
	user, key, d := t.agentPhase(step)
	if err := canHonour(key, user); err != nil {
		return nil, err
	}
	env := mergeEnv(t.Env, t.SolutionEnv)
	return t.run(ctx, o, runSpec{binds: binds, cmd: []string{"bash", "/solution/solve.sh"}, env: env, timeout: d, user: user, agent: true})
}

// agentPhase is the user (and its task.toml key) and timeout of the
// agent's phase of step (nil: the task's).
func (t *Task) agentPhase(step *Step) (*User, string, time.Duration) {
	user, key, d := t.AgentUser, "agent.user", t.AgentTimeout
	if step != nil {
		if step.AgentUser != nil {
			user, key = step.AgentUser, fmt.Sprintf("steps[%q].agent.user", step.Name)
		}
		if step.AgentTimeout > 0 {
			d = step.AgentTimeout
		}
	}
	if d <= 0 {
		d = DefaultSolveTimeout
	}
	return user, key, d
}

// Setup runs step n's workdir/setup.sh (uploaded into the workspace by
// PrepareStep) with `bash WORKDIR/setup.sh`, in the workdir, as the step's
// agent user, before its agent runs. A step without one returns nil, nil;
// a non-zero exit ends the step (and the task), as in Harbor.
func (t *Task) Setup(ctx context.Context, o RunOptions) (*Result, error) {
	step, err := t.optStep(o.Step)
	if err != nil {
		return nil, err
	}
	if step == nil || !step.HasSetup() {
		return nil, nil
	}
	logs, err := makeScratch(o.Scratch)
	if err != nil {
		return nil, err
	}
	user, key, d := t.agentPhase(step)
	if err := canHonour(key, user); err != nil {
		return nil, err
	}
	binds := []sandbox.Bind{{Src: logs, Dst: "/logs", Writable: true}}
	return t.run(ctx, o, runSpec{binds: binds, cmd: []string{"bash", path.Join(t.WorkDir, "setup.sh")}, env: t.Env, timeout: d, user: user, agent: true})
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
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := copyDirInto(src, root, "."); err != nil {
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

// runSpec is one run of Task.run.
type runSpec struct {
	binds   []sandbox.Bind
	cmd     []string
	env     []string
	timeout time.Duration
	// guard watches /logs/verifier and holds the leader until its pid is
	// known (grading).
	guard bool
	// user runs cmd (nil: root inside).
	user *User
	// agent says the run is the agent's phase (oracle, setup): the
	// workspace is given to a non-root user as it is to a harness.
	agent bool
	// egress, when set, serves the egress proxy on a door of the sandbox.
	egress *egress.Options
}

// egressDoor names the grading sandbox's egress door.
const egressDoor = "egress"

// run starts a sandbox with the workspace at WorkDir and binds, runs cmd
// until it exits or timeout passes, and reports how it ended. With guard,
// the sandbox's /logs/verifier mount is watched (watch.go) and cmd's
// leader is held until its pid is known.
func (t *Task) run(ctx context.Context, o RunOptions, sp runSpec) (*Result, error) {
	start := time.Now()
	if err := mountable(t.WorkDir); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	cmd, binds := sp.cmd, sp.binds
	ids, err := t.identityFiles(filepath.Join(o.Scratch, "etc"))
	if err != nil {
		return nil, err
	}
	binds = append(binds, ids...)
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
	uid := 0
	if !sp.user.Root() {
		uid = sp.user.UID
	}
	home := filepath.Join(o.Scratch, "home")
	homeAt := sp.user.home()
	homeBind := sandbox.Bind{Src: home, Dst: homeAt, Writable: true}
	if !sp.user.Root() {
		// /home/NAME has no mount point in the host's read-only root: the
		// sandbox gets a /home of its own holding only the user's.
		homes := filepath.Join(o.Scratch, "homes")
		home = filepath.Join(homes, path.Base(homeAt))
		if err := os.MkdirAll(home, 0o755); err != nil {
			return nil, fmt.Errorf("task %s: HOME: %w", t.ID, err)
		}
		homeBind = sandbox.Bind{Src: homes, Dst: "/home"}
	}
	// The workspace and HOME are binds rather than Config.Workspace and
	// Home: those also appear at their host paths, whose parents (the
	// daemon's private directories) the sandbox's ids cannot search.
	front := []sandbox.Bind{{Src: o.Workspace, Dst: t.WorkDir, Writable: true}, homeBind}
	if !sp.user.Root() {
		front = append(front, sandbox.Bind{Src: home, Dst: homeAt, Writable: true})
	}
	binds = append(front, binds...)
	cfg := sandbox.Config{
		Init: o.Init, Name: "task-" + t.ID, Hostname: "task",
		Hide:  hideOutside(append(append([]string(nil), o.Hide...), t.hidden...), t.WorkDir),
		Binds: binds, UID: &uid, GID: &uid,
		// The harness's restrictions: the seccomp filter, a cgroup of its
		// own with memory, pids and CPU bounds, no network but loopback
		// (and the egress door, when the grader may use the proxy).
		Seccomp: true,
		Limits:  t.limits(o),
	}
	if sp.egress != nil {
		cfg.Doors = []sandbox.Door{{Name: egressDoor}}
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
	huid, hgid := sb.HostIDs()
	restore, err := t.giveWorkspace(o.Workspace, sp, huid, hgid, uid)
	if err != nil {
		return nil, fmt.Errorf("task %s: give %s to the sandbox: %w", t.ID, o.Workspace, err)
	}
	defer restore()
	if err := chownTree(home, huid, hgid); err != nil {
		return nil, fmt.Errorf("task %s: give %s to the sandbox: %w", t.ID, home, err)
	}
	env := sp.env
	if sp.egress != nil {
		stop, addr, err := serveEgress(sb.Door(egressDoor), *sp.egress, t.VerifierNetwork)
		if err != nil {
			return nil, fmt.Errorf("task %s: the grader's egress proxy: %w", t.ID, err)
		}
		defer stop()
		env = mergeEnv(env, egress.Environ(addr))
	}
	user := "root"
	if sp.user != nil && sp.user.Name != "" {
		user = sp.user.Name
	}
	fullEnv := append([]string{"PATH=" + sandboxPath, "HOME=" + homeAt, "USER=" + user, "LOGNAME=" + user, "LANG=C.UTF-8", "TERM=dumb"}, env...)
	res := &Result{}
	var inR, inW *os.File
	run := sandbox.Command{Path: cmd[0], Args: cmd[1:], Env: fullEnv, Dir: t.WorkDir, Stdout: outW, Stderr: errW}
	if sp.guard {
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
	rctx, cancel := context.WithTimeout(ctx, sp.timeout)
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

// mountable says why the workspace cannot be mounted at dir: the
// sandbox's root is the host's, read-only, so a mount point can be made
// only where the host has no directory yet at dir's parent (the sandbox's
// own tmpfs root holds it) or at dir itself.
func mountable(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	for p := path.Dir(dir); p != "/"; p = path.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("the workdir %s cannot be mounted: its parent %s is the host's (read-only in the sandbox) and has no %s; use a workdir at the top level (/app) or below a directory the host lacks", dir, p, path.Base(dir))
		}
	}
	return nil
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

// giveWorkspace hands the workspace to the run's sandbox, whose process
// (even its root: the sandbox drops every capability) can only use files
// it owns or that their modes open to it. A task that names no user gets
// the whole workspace given to the run's user, as before. A task that
// names users keeps each file's owner across sandboxes (an id inside stays
// the same id inside, so `ls -l` names the agent), what the daemon made
// becoming root's — the agent user's in the agent's phase (oracle,
// setup.sh), which also gets the workspace directory itself — and the
// workspace directory is opened to all (0755 at least), as a container's
// WORKDIR is: a file the agent made unreadable to others stays so to a
// root verifier, which has no capabilities here. Afterwards the
// workspace's ids are put back as they were when a harness's sandbox owns
// it (a harness alive between the steps of a task keeps its view).
func (t *Task) giveWorkspace(ws string, sp runSpec, huid, hgid, uid int) (func(), error) {
	restore := func() {}
	if os.Geteuid() != 0 {
		return restore, nil // the single id map: the sandbox's root is our own uid
	}
	fi, err := os.Stat(ws)
	if err != nil {
		return restore, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if len(t.users()) == 0 {
		if st != nil {
			if _, live := insideID(st.Uid); live {
				ou, og := int(st.Uid), int(st.Gid)
				restore = func() { chownTree(ws, ou, og) }
			}
		}
		return restore, chownTree(ws, huid, hgid)
	}
	if from, ok := rangeBase(ws); ok {
		restore = func() { remapTree(ws, from, from, -1) }
	}
	daemonOwned := 0
	if sp.agent {
		daemonOwned = uid
	}
	if err := remapTree(ws, huid-uid, hgid-uid, daemonOwned); err != nil {
		return restore, err
	}
	if sp.agent {
		if err := os.Chown(ws, huid, hgid); err != nil {
			return restore, err
		}
	}
	return restore, os.Chmod(ws, fi.Mode().Perm()|0o755)
}

// remapTree gives every file of dir to the same id inside a sandbox
// whose inside 0 is host uid0:gid0: a file a sandbox's id N owns (a host
// id of one of the sandbox ranges, DefaultRanges) becomes uid0+N; any
// other (the daemon's) becomes uid0+daemonOwned, or keeps its owner when
// daemonOwned is negative. Symlinks are not followed, and the walk stays
// beneath dir (beneath.LchownTree).
func remapTree(dir string, uid0, gid0, daemonOwned int) error {
	if os.Geteuid() != 0 {
		return nil // the single id map: the sandbox's root is our own uid
	}
	return beneath.LchownTree(dir, func(uid, gid uint32) (int, int, bool) {
		u, uok := insideID(uid)
		g, gok := insideID(gid)
		if !uok || !gok {
			if daemonOwned < 0 {
				return 0, 0, false
			}
			u, g = daemonOwned, daemonOwned
		}
		return uid0 + u, gid0 + g, true
	})
}

// rangeBase is the host id of inside 0 of the sandbox range dir's owner
// belongs to; false when dir's owner is no sandbox's.
func rangeBase(dir string) (int, bool) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	in, ok := insideID(st.Uid)
	if !ok {
		return 0, false
	}
	return int(st.Uid) - in, true
}

// insideID is the id inside its sandbox of host id h, when h lies in
// DefaultRanges.
func insideID(h uint32) (int, bool) {
	base := uint64(sandbox.DefaultIDBase)
	if uint64(h) < base || uint64(h) >= base+4096*sandbox.RangeSize {
		return 0, false
	}
	return int((uint64(h) - base) % sandbox.RangeSize), true
}

// chownTree gives dir and everything in it to uid:gid (not following
// symlinks, beneath dir: beneath.LchownTree), so that the sandbox's root may
// write there.
func chownTree(dir string, uid, gid int) error {
	if os.Geteuid() != 0 {
		return nil // the single id map: the sandbox's root is our own uid
	}
	return beneath.LchownTree(dir, func(uint32, uint32) (int, int, bool) { return uid, gid, true })
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
