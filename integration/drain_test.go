package integration

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// healthCmd runs `harnessd health` with args against d and returns its exit
// code.
func healthCmd(t *testing.T, d *daemon, args ...string) int {
	t.Helper()
	cmd := exec.Command(harnessdBin(t), append([]string{"health", "--url", d.URL}, args...)...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		t.Logf("harnessd health %v: %s", args, out)
		return ee.ExitCode()
	}
	t.Fatalf("harnessd health: %v\n%s", err, out)
	return -1
}

// waitNotReady polls /ready until it answers 503 and returns its reason.
func waitNotReady(t *testing.T, d *daemon) string {
	t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		code, v := d.Do("GET", "/ready", "", nil)
		if code == http.StatusServiceUnavailable {
			r := obj(t, v, "/ready")
			if r["status"] != "not_ready" {
				t.Fatalf("/ready 503 with status %v", r["status"])
			}
			reason, _ := r["reason"].(string)
			return reason
		}
		if code != http.StatusOK {
			t.Fatalf("/ready: HTTP %d %v", code, v)
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready stayed 200")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDrainFinishesRunningTurn: under --drain-policy finish (the default)
// a turn running when SIGTERM arrives completes and is answered; meanwhile
// readiness is false, liveness true, new sessions are refused and the
// listener still answers probes.
func TestDrainFinishesRunningTurn(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--max-sessions", "2", "--drain-timeout", "60s", isolationProcess[0], isolationProcess[1]}, Harness: agentCmd(t)})
	if code, v := d.Do("GET", "/ready", "", nil); code != http.StatusOK || obj(t, v, "/ready")["status"] != "ready" {
		t.Fatalf("/ready before the drain: %d %v", code, v)
	}
	if c := healthCmd(t, d, "--ready"); c != 0 {
		t.Fatalf("harnessd health --ready before the drain: exit %d", c)
	}
	ws := dialRaw(t, d, "/ws", nil)
	obsData(t, ws.request(map[string]any{"type": "reset"}))
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	ws.send(stepFrame("write " + started + " yes;;waitfor " + release + ";;reply finished"))
	waitFile(t, started)

	d.Signal(syscall.SIGTERM)
	if reason := waitNotReady(t, d); !strings.Contains(reason, "draining") {
		t.Errorf("/ready reason while draining: %q", reason)
	}
	h := d.Health()
	if h["status"] != "healthy" || h["draining"] != true {
		t.Errorf("/health while draining: %v", h)
	}
	if c := healthCmd(t, d); c != 0 {
		t.Errorf("harnessd health (liveness) while draining: exit %d, want 0", c)
	}
	if c := healthCmd(t, d, "--ready"); c != 1 {
		t.Errorf("harnessd health --ready while draining: exit %d, want 1", c)
	}
	// No new session while draining.
	other := dialRaw(t, d, "/ws", nil)
	if code, reason, frames := other.expectClose(); code != websocket.StatusPolicyViolation || len(frames) != 1 || frames[0]["type"] != "error" {
		t.Errorf("a new /ws session while draining: close %d %q, frames %v", code, reason, frames)
	}
	if code, _ := d.Do("POST", "/reset", "{}", nil); code != http.StatusServiceUnavailable {
		t.Errorf("POST /reset while draining: HTTP %d, want 503", code)
	}

	if err := os.WriteFile(release, []byte("go"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := responseOf(t, obsData(t, ws.read())); !strings.HasSuffix(r, "\nfinished") {
		t.Errorf("the running turn's answer: %q, want it to end in finished", r)
	}
	if code, _, frames := ws.expectClose(); code != websocket.StatusGoingAway || len(frames) != 0 {
		t.Errorf("after the finished turn: close %d, frames %v", code, frames)
	}
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	d.WaitLog(`"msg":"drained"`, `"policy":"finish"`)
}

// TestDrainCancelsRunningTurn: under --drain-policy cancel a turn running
// when SIGTERM arrives is abandoned at once and answered as cancelled.
func TestDrainCancelsRunningTurn(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--drain-policy", "cancel", "--drain-timeout", "60s", isolationProcess[0], isolationProcess[1]}, Harness: agentCmd(t)})
	ws := dialRaw(t, d, "/ws", nil)
	obsData(t, ws.request(map[string]any{"type": "reset"}))
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	ws.send(stepFrame("write " + started + " yes;;waitfor " + filepath.Join(dir, "never") + ";;reply finished"))
	waitFile(t, started)

	d.Signal(syscall.SIGTERM)
	code, _, frames := ws.expectClose()
	if code != websocket.StatusGoingAway {
		t.Errorf("close %d, want 1001", code)
	}
	if len(frames) != 1 || frames[0]["type"] != "observation" {
		t.Fatalf("want the cancelled turn's observation before the close, got %v", frames)
	}
	md := meta(t, obsData(t, frames[0]))
	if md["error_type"] != "cancelled" && md["cancelled"] != true {
		t.Errorf("the abandoned turn's observation is not cancelled: %v", md)
	}
	if r, _ := md["response"].(string); strings.HasSuffix(r, "finished") {
		t.Errorf("the turn finished under the cancel policy")
	}
	if c := d.Wait(); c != 0 {
		t.Fatalf("exit code %d", c)
	}
	d.WaitLog(`"msg":"drained"`, `"policy":"cancel"`)
}

// TestReadinessFollowsPrograms: /ready turns 503 with a reason when the
// harness program or a tool server's program stops being executable or
// vanishes, and 200 again once it is back; /health stays 200 throughout.
func TestReadinessFollowsPrograms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := filepath.Join(dir, "my-harness")
	tool := filepath.Join(dir, "my-tools")
	for _, p := range []string{prog, tool} {
		b, err := os.ReadFile(testharnessBin(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := startDaemon(t, spec{Flags: []string{"--tool=stdio:" + tool + " tools"}, Harness: []string{prog, "agent"}})
	ready := func() {
		t.Helper()
		if code, v := d.Do("GET", "/ready", "", nil); code != http.StatusOK {
			t.Fatalf("/ready: HTTP %d %v", code, v)
		}
	}
	ready()
	for _, tc := range []struct {
		name, path, want string
		breakIt, fix     func(string) error
	}{
		{"harness not executable", prog, "not executable", func(p string) error { return os.Chmod(p, 0o644) }, func(p string) error { return os.Chmod(p, 0o755) }},
		{"harness gone", prog, "does not exist", func(p string) error { return os.Rename(p, p+".away") }, func(p string) error { return os.Rename(p+".away", p) }},
		{"tool server gone", tool, "tool server", func(p string) error { return os.Rename(p, p+".away") }, func(p string) error { return os.Rename(p+".away", p) }},
	} {
		if err := tc.breakIt(tc.path); err != nil {
			t.Fatal(err)
		}
		if reason := waitNotReady(t, d); !strings.Contains(reason, tc.want) {
			t.Errorf("%s: /ready reason %q, want it to mention %q", tc.name, reason, tc.want)
		}
		if c := healthCmd(t, d, "--ready"); c != 1 {
			t.Errorf("%s: harnessd health --ready exit %d, want 1", tc.name, c)
		}
		d.Health() // liveness is unaffected
		if err := tc.fix(tc.path); err != nil {
			t.Fatal(err)
		}
		ready()
	}
}
