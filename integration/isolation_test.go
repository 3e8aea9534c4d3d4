package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/internal/testbin"
)

// TestHealthSaysTheIsolation: /health names the level harnesses run at —
// sandbox by default where the host allows it, process when asked.
func TestHealthSaysTheIsolation(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	for level, flags := range map[string][]string{
		"sandbox": nil,
		"process": isolationProcess,
	} {
		d := startDaemon(t, spec{Flags: flags, Harness: agentCmd(t)})
		code, v := d.Do(http.MethodGet, "/health", "", nil)
		if got := obj(t, v, "/health")["isolation"]; code != http.StatusOK || got != level {
			t.Errorf("/health with %v: %d isolation %v, want %s", flags, code, got, level)
		}
	}
}

// TestWarmFlagHandsOverAStandby: serve --warm 1 prepares the next episode,
// and a reset made once it is ready is handed it.
func TestWarmFlagHandsOverAStandby(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--warm", "1"}, Harness: agentCmd(t)})
	ctx := context.Background()
	env, err := client.Dial(ctx, d.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	first, err := env.Reset(ctx, client.ResetOptions{})
	if err != nil || first.Done {
		t.Fatalf("reset: %v %+v", err, first)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(200 * time.Millisecond) // the standby's start
		obs, err := env.Reset(ctx, client.ResetOptions{})
		if err != nil || obs.Done {
			t.Fatalf("reset: %v %+v", err, obs)
		}
		if obs.Metadata.Standby {
			if obs.Metadata.EpisodeID == first.Metadata.EpisodeID {
				t.Fatalf("the standby has the previous episode's id")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no reset was handed a standby within 30s of --warm 1")
		}
	}
}

// TestSandboxFailsClosed: on a host that refuses user namespaces (here a
// user namespace whose user.max_user_namespaces the test sets to 0),
// --isolation sandbox refuses to start with exit code 3 and one line
// naming what is missing, while auto falls back to process isolation with
// a warning.
func TestSandboxFailsClosed(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		testbin.Missing(t, "unshare (util-linux) is not on PATH")
	}
	run := func(iso string) (string, int) {
		script := fmt.Sprintf("echo 0 > /proc/sys/user/max_user_namespaces && exec %q serve --isolation %s --listen 127.0.0.1:0 --addr-file %q -- %q agent",
			testbin.Path(t, "harnessd"), iso, filepath.Join(t.TempDir(), "addr"), testharnessBin(t))
		cmd := exec.Command(unshare, "-U", "-r", "--kill-child", "sh", "-c", script)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			// Still serving: unshare's --kill-child ends the daemon with it.
			cmd.Process.Kill()
			<-done
		}
		return out.String(), cmd.ProcessState.ExitCode()
	}
	out, code := run("sandbox")
	if code != 3 || !strings.Contains(out, "isolation: sandbox is not available on this host") || !strings.Contains(out, "user namespaces") {
		t.Errorf("--isolation sandbox without user namespaces: exit %d\n%s", code, out)
	}
	out, _ = run("auto")
	if !strings.Contains(out, "no sandbox on this host; harnesses run in process isolation") || !strings.Contains(out, `"isolation":"process"`) && !strings.Contains(out, "isolation=process") {
		t.Errorf("--isolation auto without user namespaces did not fall back to process isolation:\n%s", out)
	}
}
