package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/websocket"
	"github.com/harnessd/harnessd/client"
)

// TestSIGTERMDrain: SIGTERM with a turn running and other sessions open
// ends every session, closes sockets with 1001 (going away), kills every
// process of every tree — escapees included — and exits 0.
func TestSIGTERMDrain(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			drain(t, sig)
		})
	}
}

func drain(t *testing.T, sig syscall.Signal) {
	// The cancel policy: the running turn below (60 s) is abandoned at once.
	d := startDaemon(t, spec{Flags: []string{toolsFlag(t), "--max-sessions", "3", "--drain-policy", "cancel", isolationProcess[0], isolationProcess[1]}, Harness: agentCmd(t)})

	busy := dialRaw(t, d, "/ws", nil)
	obsData(t, busy.request(map[string]any{"type": "reset"}))
	sd := obj(t, busy.request(map[string]any{"type": "state"})["data"], "state")
	pids := []proc{mustProc(t, int(sd["harness_pid"].(float64)))}
	f := busy.request(map[string]any{"type": "mcp", "data": map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "stats"}}})
	var stats struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	b, _ := json.Marshal(f["data"])
	json.Unmarshal(b, &stats)
	var st struct{ PID int }
	if len(stats.Result.Content) == 0 || json.Unmarshal([]byte(stats.Result.Content[0].Text), &st) != nil || st.PID == 0 {
		t.Fatalf("stats tool: %s", b)
	}
	pids = append(pids, mustProc(t, st.PID))
	resp := responseOf(t, obsData(t, busy.request(stepFrame("escape ignore-term;;orphan;;spawn ignore-term"))))
	for _, word := range []string{"escaped", "orphaned", "spawned"} {
		pids = append(pids, mustProc(t, pidAfter(t, resp, word)))
	}

	idle := dialRaw(t, d, "/ws", nil)
	obsData(t, idle.request(map[string]any{"type": "reset"}))
	if code, v := d.Do("POST", "/reset", "{}", nil); code != 200 {
		t.Fatalf("POST /reset: %d %v", code, v)
	}
	_, v := d.Do("GET", "/state", "", nil)
	pids = append(pids, mustProc(t, int(obj(t, v, "state")["harness_pid"].(float64))))
	if len(d.Tree()) < 9 { // 3 harnesses, 3 tool servers, 3 sleepers
		t.Fatalf("tree before the signal: %s", describe(d.Tree()))
	}

	started := filepath.Join(t.TempDir(), "started")
	busy.send(stepFrame("write " + started + " yes;;ignore-term;;sleep 60s"))
	waitFile(t, started)

	d.Signal(sig)
	for name, w := range map[string]*rawWS{"busy": busy, "idle": idle} {
		code, _, frames := w.expectClose()
		if code != websocket.StatusGoingAway {
			t.Errorf("%s socket closed with %d, want 1001", name, code)
		}
		for _, f := range frames {
			// The abandoned turn may still be answered before the close.
			if name == "idle" || (f["type"] != "observation" && f["type"] != "error") {
				t.Errorf("%s socket: unexpected frame before the close: %v", name, f)
			}
		}
	}
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d after %s", code, sig)
	}
	waitGone(t, pids...)
	if left := markedProcs(d.Marker); len(left) > 0 {
		t.Fatalf("left behind: %s", describe(left))
	}
	if !strings.Contains(d.Log(), `"msg":"drained"`) {
		t.Fatalf("no drain in the log")
	}
}

// runHarnessd runs `harnessd run` with the marker set; it returns the exit
// code, stdout and stderr, and checks that nothing was left behind.
func runHarnessd(t *testing.T, stdin string, args ...string) (int, []byte, string) {
	t.Helper()
	marker := newMarker()
	cmd := exec.Command(harnessdBin(t), append([]string{"run"}, args...)...)
	cmd.Env = cleanEnv(markerVar+"="+marker, "TMPDIR="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("harnessd run: %v", err)
	}
	if left := waitNoMarked(marker, goneTimeout); len(left) > 0 {
		t.Errorf("harnessd run left processes behind: %s", describe(left))
	}
	return code, out.Bytes(), errb.String()
}

// TestRunCommand: `harnessd run` plays one episode without a server: exit
// code 0 and the final observation as JSON, events on stderr; a failed
// episode exits 1.
func TestRunCommand(t *testing.T) {
	t.Parallel()
	agent := agentCmd(t)

	code, out, stderr := runHarnessd(t, "", append([]string{toolsFlag(t), "-m", "reply hi", "-m", `tool add {"a":1,"b":2}`, "-m", "reply bye;;done", "-m", "never sent", "--"}, agent...)...)
	var final map[string]any
	if err := json.Unmarshal(out, &final); err != nil {
		t.Fatalf("stdout is not one JSON observation: %v\n%s\nstderr:\n%s", err, out, stderr)
	}
	obs := checkRunObservation(t, final, out)
	if code != 0 || obs["done"] != true || responseOf(t, obs) != "bye" || meta(t, obs)["turn_number"] != 3.0 {
		t.Fatalf("run: exit %d, final %v\nstderr:\n%s", code, obs, stderr)
	}
	if !containsAll(stderr, "tool_call", "add", "turn_complete") {
		t.Fatalf("events were not printed:\n%s", stderr)
	}

	code, out, stderr = runHarnessd(t, "reply a\n\nhistory\n", append([]string{"--"}, agent...)...)
	json.Unmarshal(out, &final)
	if code != 0 || responseOf(t, checkRunObservation(t, final, out)) != "history: reply a | history" {
		t.Fatalf("run from stdin: exit %d, %s\n%s", code, out, stderr)
	}

	code, _, stderr = runHarnessd(t, "", "-m", "hi")
	if code != 2 {
		t.Fatalf("run without a harness: exit %d (want 2, usage)\n%s", code, stderr)
	}
	code, out, stderr = runHarnessd(t, "", append([]string{"-m", "escape ignore-term;;crash 4", "--"}, agent...)...)
	json.Unmarshal(out, &final)
	obs = checkRunObservation(t, final, out)
	if code != 1 || meta(t, obs)["error_type"] != "harness_crashed" || obs["done"] != true {
		t.Fatalf("run with a crash: exit %d, %s\n%s", code, out, stderr)
	}
}

// checkRunObservation checks harnessd run's final observation: one line,
// {"reward", "done", "metadata"}, the metadata once.
func checkRunObservation(t *testing.T, v map[string]any, out []byte) map[string]any {
	t.Helper()
	if _, ok := v["observation"]; ok || v["metadata"] == nil || bytes.Count(out, []byte("\n")) != 1 || !bytes.HasSuffix(out, []byte("\n")) {
		t.Fatalf("run's stdout is not one line {reward, done, metadata}:\n%s", out)
	}
	if _, ok := v["done"].(bool); !ok {
		t.Fatalf("done is not a boolean: %s", out)
	}
	return v
}

// TestDrainClosesGoClients: the Go client reports a daemon's drain as
// ErrClosed with the close status 1001, on /ws and /harness.
func TestDrainClosesGoClients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := production(t, []string{"--max-sessions", "2"})
	h, err := client.DialHarness(ctx, d.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	env, err := client.Dial(ctx, d.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := env.State(ctx); err != nil {
		t.Fatal(err)
	}
	d.Signal(syscall.SIGTERM)
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	_, err = h.Send(ctx, "hello", nil)
	if !errors.Is(err, client.ErrClosed) || !strings.Contains(err.Error(), "1001") {
		t.Fatalf("/harness Send after the drain: %v", err)
	}
	_, err = env.State(ctx)
	if !errors.Is(err, client.ErrClosed) || !strings.Contains(err.Error(), "1001") {
		t.Fatalf("/ws State after the drain: %v", err)
	}
}
