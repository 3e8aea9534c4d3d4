package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/process/sandbox"
)

// The harness cannot get into its init — any of its threads, the forker
// (which holds the init's effective and permitted capabilities) among
// them — by ptrace, /proc/1/task/*/{mem,environ,fd,cwd,syscall},
// pidfd_getfd or process_vm_readv, in either id map and without the
// seccomp filter (the single map runs the harness as uid 0, the init's
// uid). The positive control is the same tries against a child of the
// harness, which all succeed.
func TestHarnessCannotReachItsInitsThreads(t *testing.T) {
	need(t)
	for _, ids := range []sandbox.IDMode{sandbox.IDRange, sandbox.IDSelf} {
		t.Run(string(ids), func(t *testing.T) {
			cfg := baseConfig(t)
			cfg.IDs = ids
			child, _ := attempt(t, cfg, "reach", "child")
			if !child.OK || child.N == 0 || len(child.List) != child.N {
				t.Fatalf("positive control: of %d tries on the harness's own child, only %v succeeded (%s)", child.N, child.List, child.Error)
			}
			init, _ := attempt(t, cfg, "reach", "1")
			if !init.OK || init.N < 6*2 {
				t.Fatalf("the tries on the init did not run: %+v", init)
			}
			if len(init.List) != 0 {
				t.Errorf("the harness got into its init (%d tries): %v", init.N, init.List)
			}
			if init.Error != "" {
				t.Logf("note: %s", init.Error)
			}
		})
	}
}

// The harness cannot end its init with a signal. The init (Go) catches
// every signal, so the kernel's shield for a namespace's init (only
// signals it handles get through from inside) does not cover it, and the
// runtime dies of SIGQUIT, SIGABRT, SIGILL, SIGTRAP, SIGSYS and SIGSTKFLT
// even when they come from kill(2), unless the init drops them
// (dropLethalSignals). A harness that ended its init would end its run as
// the init's death (Exit.InitDied), not as its own exit. The positive
// control: with the single id map the harness, uid 0 like its init, may
// signal it, and its kill(2) succeeds (the signal was delivered); with a
// range it gets EPERM.
func TestHarnessCannotEndItsInitBySignal(t *testing.T) {
	need(t)
	lethal := []unix.Signal{unix.SIGQUIT, unix.SIGABRT, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS, unix.SIGSTKFLT}
	for _, ids := range []sandbox.IDMode{sandbox.IDRange, sandbox.IDSelf} {
		for i, sig := range lethal {
			seccomp := i%2 == 1 // with and without the filter, which lets kill(2) through
			t.Run(fmt.Sprintf("%s/%s/seccomp=%v", ids, unix.SignalName(sig), seccomp), func(t *testing.T) {
				cfg := baseConfig(t)
				cfg.IDs, cfg.Seccomp = ids, seccomp
				r, e := attempt(t, cfg, "initsig", strconv.Itoa(int(sig)))
				if ids == sandbox.IDSelf && !r.OK {
					t.Errorf("positive control: the harness's kill(1, %s) failed (%+v): the signal never reached the init", unix.SignalName(sig), r)
				}
				if e.InitDied {
					t.Errorf("the harness's %s to its init (kill: %+v) killed the init: the run ended %+v", unix.SignalName(sig), r, e)
				} else if e.Status.Code != 0 {
					t.Errorf("the run ended %+v, want the agent's exit 0", e)
				}
			})
		}
	}
}

// The harness cannot lower the daemon's scheduling weight through its
// init: /proc/1/autogroup is writable by the init's owner — the harness
// itself with the single id map (uid 0 inside, like the init) — so an
// init in the daemon's session would hand the harness the daemon's group;
// it leads a session of its own. The positive control is a plain child
// of the daemon's session, which does lower the daemon's group.
func TestHarnessCannotLowerTheDaemonsWeightThroughItsInit(t *testing.T) {
	need(t)
	for _, ids := range []sandbox.IDMode{sandbox.IDRange, sandbox.IDSelf} {
		t.Run(string(ids), func(t *testing.T) {
			rep := autogroupStandIn(t, ids, "autogroup-nice", "1")
			if rep.Before != "nice 0" || rep.AfterHarness != "nice 0" {
				t.Errorf("the daemon's group went from %q to %q when the harness wrote 19 to its init's /proc/1/autogroup (%+v)", rep.Before, rep.AfterHarness, rep.Harness)
			}
			t.Logf("the harness's write to /proc/1/autogroup: %+v", rep.Harness)
			if !rep.Child.OK || rep.AfterChild != "nice 19" {
				t.Errorf("positive control: a plain child (%+v) left the daemon's group at %q, want nice 19", rep.Child, rep.AfterChild)
			}
		})
	}
}

// TestHarnessCannotChangeItsInitsScheduling: the init's forker thread
// passes its policy and nice value to every harness it forks, later
// tenants' of a kept sandbox included, and neither SCHED_IDLE nor nice 19
// can be undone without CAP_SYS_NICE. A harness cannot set them on its
// init's threads, in either id mode (EPERM), so no tenant's choice reaches
// the next. The positive control is the test (root on the host) setting
// the init's nice value, and setting it back.
func TestHarnessCannotChangeItsInitsScheduling(t *testing.T) {
	need(t)
	for _, ids := range []sandbox.IDMode{sandbox.IDRange, sandbox.IDSelf} {
		t.Run(string(ids), func(t *testing.T) {
			cfg := baseConfig(t)
			cfg.IDs = ids
			ctx, sb := openSandbox(t, cfg)
			if r, _ := runAgain(t, ctx, sb, nil, "slowinit"); r.OK || r.Errno != "EPERM" {
				t.Errorf("the harness set its init's threads to SCHED_IDLE, nice 19: %+v", r)
			}
			if r, _ := runAgain(t, ctx, sb, nil, "sched"); r.Value != "0/0" {
				t.Errorf("the next harness runs with policy/nice %s, want 0/0", r.Value)
			}
			if os.Geteuid() != 0 {
				return
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, sb.Pid(), 1); err != nil {
				t.Errorf("positive control: the host's root could not set the init's nice value: %v", err)
			}
			unix.Setpriority(unix.PRIO_PROCESS, sb.Pid(), 0)
		})
	}
}

// Every run of a sandbox that runs several harnesses in turn — one that
// fails to start among them — gets the same restrictions from the
// init's forker: no capability in any set, no_new_privs, the seccomp
// filter, and no descriptor but its stdio (none of the init's: its
// control socket, a harness's pidfd, the previous run's stdio; nor one the
// daemon inherited without close-on-exec). The positive control is a
// plain child of the test, which holds that inherited descriptor.
func TestEveryRunIsRestrictedAndHoldsOnlyItsStdio(t *testing.T) {
	need(t)
	var p [2]int
	if err := unix.Pipe2(p[:], 0); err != nil { // no O_CLOEXEC
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	var st unix.Stat_t
	if err := unix.Fstat(p[0], &st); err != nil {
		t.Fatal(err)
	}
	leaked := fmt.Sprintf("%d pipe:[%d]", p[0], st.Ino)
	out, err := exec.Command(self(t), agentCommand, "self").Output()
	var child result
	if err != nil || json.Unmarshal(out, &child) != nil || !slices.Contains(child.List, leaked) {
		t.Fatalf("positive control: a plain child should hold the inherited %s: %q (%v)", leaked, out, err)
	}
	for _, ids := range []sandbox.IDMode{sandbox.IDRange, sandbox.IDSelf} {
		t.Run(string(ids), func(t *testing.T) {
			cfg := baseConfig(t)
			cfg.IDs, cfg.Seccomp = ids, true
			ctx, sb := openSandbox(t, cfg)
			for i := range 4 {
				if i == 2 {
					if _, err := sb.Run(ctx, sandbox.Command{Path: "/no/such/agent"}); err == nil {
						t.Fatal("a missing program started")
					}
				}
				r, e := runAgain(t, ctx, sb, nil, "self")
				if !r.OK {
					t.Fatalf("run %d: harness said %+v, exit %+v", i, r, e)
				}
				if len(r.List) != 0 {
					t.Errorf("run %d: the harness holds descriptors beyond its stdio: %v", i, r.List)
				}
				for _, want := range []string{"CapInh:0000000000000000", "CapPrm:0000000000000000", "CapEff:0000000000000000",
					"CapBnd:0000000000000000", "CapAmb:0000000000000000", "NoNewPrivs:1", "Seccomp:2"} {
					if !slices.Contains(strings.Fields(r.Value), want) {
						t.Errorf("run %d: the harness's status %q lacks %s", i, r.Value, want)
					}
				}
			}
		})
	}
}

// The harness cannot make its init the OOM killer's first victim (raise
// /proc/1/oom_score_adj, which anyone who may open it may raise): under a
// memory limit the kernel would then kill the init, and with it the
// namespace, before the process that ran the cgroup out of memory. The
// positive control is the harness's own child. Only a private id range is
// checked: with the single id map the harness, uid 0 inside, owns its
// non-dumpable init's /proc files and can raise the score (a known
// limitation of that map: docs/security.md, "The single id map").
func TestHarnessCannotRaiseItsInitsOOMScore(t *testing.T) {
	need(t)
	cfg := baseConfig(t)
	cfg.IDs = sandbox.IDRange
	if child, _ := attempt(t, cfg, "oom-adj", "child"); !child.OK || child.Value != "1000" {
		t.Fatalf("positive control: the harness should raise its own child's oom_score_adj: %+v", child)
	}
	if init, _ := attempt(t, cfg, "oom-adj", "1"); init.OK || init.Value == "1000" {
		t.Errorf("the harness raised its init's oom_score_adj to %s: %+v", init.Value, init)
	}
}

// A harness that asks for a parent-death signal gets none while its
// sandbox lives, run after run: its parent is the init's forker thread,
// which never exits, though the init's other threads may. The positive
// control, inside the harness, is a child forked from a thread that then
// exits: it gets its signal.
func TestAParentDeathSignalIsNotSentSpuriously(t *testing.T) {
	need(t)
	ctx, sb := openSandbox(t, baseConfig(t))
	for i := range 3 {
		args := []string{"pdeath", "1"}
		if i == 0 {
			args = append(args, "control")
		}
		// Meanwhile the init's signal handling runs (SIGWINCH, which
		// the init does not forward and the agent ignores).
		r, e := runAgain(t, ctx, sb, func() {
			for range 4 {
				time.Sleep(300 * time.Millisecond)
				sb.Signal(syscall.SIGWINCH)
			}
		}, args...)
		if !r.OK {
			t.Fatalf("run %d: harness said %+v, exit %+v", i, r, e)
		}
		if i == 0 && (len(r.List) != 1 || !strings.Contains(r.List[0], "user defined signal 2")) {
			t.Fatalf("positive control: a child forked from a thread that exited ended %v, want by SIGUSR2", r.List)
		}
		if r.Value != "none" || e.Status.Code != 0 || e.InitDied {
			t.Errorf("run %d: the harness got %q as its parent-death signal; exit %+v", i, r.Value, e)
		}
	}
}

// Harnesses that exit at once, in several sandboxes started and closed at
// the same time through the one spawner, each get their own exit status
// back, run after run, and no init dies: the spawner routes every reply
// by its request and each init reports its own harness. The positive
// control is that the statuses differ (each sandbox's code is its own),
// so a crossed reply would show.
func TestQuickExitsInParallelSandboxesKeepTheirStatuses(t *testing.T) {
	need(t)
	const sandboxes, runs = 6, 5
	errs := make(chan error, sandboxes)
	for n := range sandboxes {
		go func() {
			errs <- func() error {
				cfg := baseConfig(t)
				cfg.Name = fmt.Sprintf("%s-%d", t.Name(), n)
				cfg.Stderr = os.Stderr
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				sb, err := sandbox.Start(ctx, cfg)
				if err != nil {
					return err
				}
				defer sb.Close()
				for i := range runs {
					code := 10 + n*runs + i
					run, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: []string{agentCommand, "exit", strconv.Itoa(code)}})
					if err != nil {
						return fmt.Errorf("sandbox %d run %d: %w", n, i, err)
					}
					e, err := run.Wait(ctx)
					if err != nil {
						return fmt.Errorf("sandbox %d run %d: %w", n, i, err)
					}
					if e.InitDied || e.Status.Code != code {
						return fmt.Errorf("sandbox %d run %d ended %+v, want code %d", n, i, e, code)
					}
				}
				return nil
			}()
		}()
	}
	for range sandboxes {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// openSandbox starts a sandbox from cfg (its stderr the test's) for
// several runs, closed when the test ends, and a context bounding them.
func openSandbox(t *testing.T, cfg sandbox.Config) (context.Context, *sandbox.Sandbox) {
	t.Helper()
	cfg.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	sb, err := sandbox.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return ctx, sb
}

// runAgain runs the agent with args once more in the open sandbox sb, its
// stdout a pipe of its own, calls during (if set) while it runs, and
// returns its result line and how the run ended.
func runAgain(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, during func(), args ...string) (result, sandbox.Exit) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	run, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Env: agentEnv, Args: append([]string{agentCommand}, args...), Stdout: pw})
	pw.Close()
	if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	if during != nil {
		during()
	}
	line, _ := bufio.NewReader(pr).ReadString('\n')
	e, err := run.Wait(ctx)
	if err != nil {
		t.Fatalf("run %v did not end: %v", args, err)
	}
	var r result
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("run %v: harness said %q (%v), exit %+v", args, line, err, e)
	}
	return r, e
}
