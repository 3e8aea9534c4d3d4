package entrypoint

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// isolationModes run each PID-1 test twice: with nothing but PID 1's own
// adoption of orphans (no cgroup, no subreaper: the reaper and the sweep do
// all the work), and with whatever this machine offers.
var isolationModes = []struct {
	name string
	args []string
}{
	{"pid1-only", []string{"--cgroup", "off", "--subreaper", "off"}},
	{"auto", nil},
}

func dial(t *testing.T, ctx context.Context, d *nsDaemon) *client.Env {
	t.Helper()
	env, err := client.Dial(ctx, d.url(), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { env.Close() })
	obs, err := env.Reset(ctx, client.ResetOptions{})
	if err != nil || obs.Done {
		t.Fatalf("reset: %v %+v", err, obs)
	}
	return env
}

func step(t *testing.T, ctx context.Context, env *client.Env, msg string) *wire.Observation {
	t.Helper()
	obs, err := env.Step(ctx, msg)
	if err != nil {
		t.Fatalf("step %q: %v", msg, err)
	}
	return obs
}

// TestPID1ReapsOrphans: orphans of an episode are adopted by harnessd as
// PID 1; one that dies while the episode runs is reaped (its zombie does not
// stay); live ones are ended when the episode ends; a crashing harness ends
// its episode, not the daemon.
func TestPID1ReapsOrphans(t *testing.T) {
	th := testbin.Path(t, "testharness")
	for _, mode := range isolationModes {
		t.Run(mode.name, func(t *testing.T) {
			d := startNS(t, append(mode.args, "--", th, "agent")...)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			env := dial(t, ctx, d)

			// Orphans that die during the episode: adopted by PID 1, reaped.
			for i := 0; i < 3; i++ {
				n := pidAfter(t, step(t, ctx, env, "orphan").ResponseText(), "orphaned")
				p, ok := d.byNsPid(n)
				if !ok || p.state == 'Z' {
					t.Fatalf("orphan %d not running: %+v", n, p)
				}
				if p.ppid != d.pid {
					t.Fatalf("orphan %v was not adopted by harnessd (host pid %d)", p, d.pid)
				}
				if err := unix.Kill(p.host, unix.SIGKILL); err != nil {
					t.Fatal(err)
				}
				if left := d.waitProcs(func(ps []nsProc) bool {
					for _, q := range ps {
						if q.host == p.host {
							return false
						}
					}
					return true
				}); left != nil {
					t.Fatalf("the dead orphan was not reaped by PID 1: %v", left)
				}
			}
			for _, p := range d.procs() {
				if p.state == 'Z' {
					t.Errorf("zombie in the namespace while the episode runs: %v", p)
				}
			}

			// Live orphans, escapees and group members end with the episode.
			step(t, ctx, env, "orphan")
			step(t, ctx, env, "escape")
			step(t, ctx, env, "spawn")
			if ps := d.procs(); len(ps) < 5 {
				t.Fatalf("expected harnessd, the agent and three sleepers, got %v", ps)
			}
			env.Close()
			if left := d.waitProcs(d.onlyInit); left != nil {
				t.Fatalf("after the episode's close the namespace still holds %v", left)
			}

			// A harness that crashes takes its episode down, not the daemon.
			env2 := dial(t, ctx, d)
			step(t, ctx, env2, "orphan")
			obs := step(t, ctx, env2, "crash 7")
			if !obs.Done || obs.Metadata.ErrorType != wire.FailureHarnessCrashed || obs.Metadata.Exit == nil || obs.Metadata.Exit.Code != 7 {
				t.Fatalf("crash: done=%v error_type=%q exit=%+v", obs.Done, obs.Metadata.ErrorType, obs.Metadata.Exit)
			}
			if left := d.waitProcs(d.onlyInit); left != nil {
				t.Fatalf("after the crash the namespace still holds %v", left)
			}
			if code := health(t, d.url()); code != http.StatusOK {
				t.Fatalf("/health after a crash: %d", code)
			}
			env2.Close()

			d.signal(syscall.SIGTERM)
			if code := d.wait(); code != 0 {
				t.Fatalf("exit code %d after SIGTERM, want 0; log:\n%s", code, d.log())
			}
		})
	}
}

// TestPID1SIGTERMDrains: SIGTERM to the namespace's PID 1 (from the host)
// ends every harness tree — gracefully, before harnessd exits, not by the
// kernel's teardown of the namespace — and harnessd exits 0.
func TestPID1SIGTERMDrains(t *testing.T) {
	th := testbin.Path(t, "testharness")
	for _, mode := range isolationModes {
		t.Run(mode.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "graceful")
			// The harness leader records the SIGTERM that a graceful stop
			// sends to its process group. The kernel's teardown of a PID
			// namespace sends SIGKILL, which leaves no record.
			// (A background job's stdin is /dev/null unless redirected from a
			// descriptor saved before, hence fd 3.)
			script := fmt.Sprintf(`trap 'echo graceful >> %s; kill $c 2>/dev/null; wait $c; exit 0' TERM; `+
				`exec 3<&0; %s agent <&3 3<&- & c=$!; exec 3<&-; wait $c`, marker, th)
			d := startNS(t, append(mode.args, "--", "/bin/sh", "-c", script)...)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			env := dial(t, ctx, d)
			step(t, ctx, env, "spawn")
			step(t, ctx, env, "escape")
			step(t, ctx, env, "orphan")
			before := d.procs()
			if len(before) < 6 {
				t.Fatalf("expected harnessd, sh, the agent and three sleepers, got %v", before)
			}

			d.signal(syscall.SIGTERM)
			if code := d.wait(); code != 0 {
				t.Fatalf("exit code %d after SIGTERM, want 0; log:\n%s", code, d.log())
			}
			if b, err := os.ReadFile(marker); err != nil || !strings.Contains(string(b), "graceful") {
				t.Fatalf("the harness tree got no SIGTERM from harnessd (marker: %q, %v); log:\n%s", b, err, d.log())
			}
			recs := d.records()
			draining, err := recordIndex(recs, "draining", func(r map[string]any) bool { return r["signal"] == "terminated" })
			if err != nil {
				t.Fatalf("%v; log:\n%s", err, d.log())
			}
			treeStopped, err := recordIndex(recs, "process tree stopped", func(r map[string]any) bool { return r["proc"] == "harness" })
			if err != nil {
				t.Fatalf("%v; log:\n%s", err, d.log())
			}
			drained, err := recordIndex(recs, "drained", nil)
			if err != nil {
				t.Fatal(err)
			}
			stopped, err := recordIndex(recs, "stopped", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !(draining < treeStopped && treeStopped < drained && drained < stopped) {
				t.Fatalf("log out of order: draining %d, harness tree stopped %d, drained %d, stopped %d", draining, treeStopped, drained, stopped)
			}
			ts := recs[treeStopped]
			if ts["escalated"] != false {
				t.Errorf("the harness tree needed SIGKILL: %v", ts)
			}
			if ts["mode"] != "cgroup" {
				// Outside a cgroup the setsid escapee and the orphan are not
				// in the tree's group: the sweep must have found and killed them.
				if n, _ := ts["escapees"].(float64); n < 2 {
					t.Errorf("sweep killed %v escapees, want the escapee and the orphan: %v", ts["escapees"], ts)
				}
			}
			if st := recs[stopped]; st["exit_code"] != float64(0) || st["live_trees"] != float64(0) {
				t.Errorf("final record: %v", st)
			}
		})
	}
}

// TestPID1Signals: SIGHUP and SIGINT drain like SIGTERM; SIGQUIT dumps
// stacks and the daemon keeps serving; a second signal, or a drain that
// overruns --drain-timeout, kills every tree and exits 1.
func TestPID1Signals(t *testing.T) {
	th := testbin.Path(t, "testharness")
	for _, c := range []struct {
		sig  syscall.Signal
		name string
	}{{syscall.SIGHUP, "hangup"}, {syscall.SIGINT, "interrupt"}} {
		t.Run(c.name+" drains", func(t *testing.T) {
			d := startNS(t, "--", th, "agent")
			d.signal(c.sig)
			if code := d.wait(); code != 0 {
				t.Fatalf("exit code %d, want 0; log:\n%s", code, d.log())
			}
			if _, err := recordIndex(d.records(), "draining", func(r map[string]any) bool { return r["signal"] == c.name }); err != nil {
				t.Fatalf("%v; log:\n%s", err, d.log())
			}
		})
	}

	t.Run("quit dumps stacks and keeps serving", func(t *testing.T) {
		d := startNS(t, "--", th, "agent")
		d.signal(syscall.SIGQUIT)
		d.waitLog("SIGQUIT: writing every goroutine's stack to stderr; the daemon keeps running")
		deadline := time.Now().Add(pollBound)
		for !strings.Contains(d.log(), "goroutine ") {
			if time.Now().After(deadline) {
				t.Fatalf("no stack dump; log:\n%s", d.log())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if code := health(t, d.url()); code != http.StatusOK {
			t.Fatalf("/health after SIGQUIT: %d", code)
		}
		d.signal(syscall.SIGTERM)
		if code := d.wait(); code != 0 {
			t.Fatalf("exit code %d, want 0", code)
		}
	})

	// A harness that ignores SIGTERM holds the drain for its stop grace.
	slowDrain := func(t *testing.T, args ...string) *nsDaemon {
		d := startNS(t, append(args, "--", th, "agent", "--ignore-term")...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		env := dial(t, ctx, d)
		step(t, ctx, env, "spawn ignore-term")
		d.signal(syscall.SIGTERM)
		d.waitLog("draining")
		return d
	}
	t.Run("second signal kills every tree", func(t *testing.T) {
		d := slowDrain(t)
		d.signal(syscall.SIGTERM)
		if code := d.wait(); code != 1 {
			t.Fatalf("exit code %d, want 1; log:\n%s", code, d.log())
		}
		recs := d.records()
		for _, msg := range []string{"second signal: killing every process tree and exiting without a full drain", "killed every process tree"} {
			if _, err := recordIndex(recs, msg, nil); err != nil {
				t.Fatalf("%v; log:\n%s", err, d.log())
			}
		}
	})
	t.Run("drain timeout kills every tree", func(t *testing.T) {
		d := slowDrain(t, "--drain-timeout", "300ms")
		if code := d.wait(); code != 1 {
			t.Fatalf("exit code %d, want 1; log:\n%s", code, d.log())
		}
		if _, err := recordIndex(d.records(), "drain timed out: killing every process tree", nil); err != nil {
			t.Fatalf("%v; log:\n%s", err, d.log())
		}
	})
}
