package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/quota"
)

// TestAHarnessHoldingASnapshotsFreezeEndsItsEpisode (red team 5): a
// snapshot freezes the episode's disk (limits.disk with
// episode.checkpoints: every_turn, or a fork), and a freeze waits for every
// write in progress. The harness leaves a process in splice(2) from an
// empty pipe into a file of its workspace, a write held open for as long
// as it likes: the checkpoint after turn 1 gave up after quota.FreezeWait
// but the kernel's freeze went on waiting, so every later write to the
// disk blocked; before turn 3 the daemon placed an event's file in the
// workspace and blocked there for good (its thread in D state): step 3
// never answered, whatever the turn timeout. Now the step whose checkpoint
// was held off ends the episode (protocol_error naming it) and the harness
// is stopped, which ends the write; no daemon thread is left waiting and
// the session resets. The control: the same episode without the held
// write answers its three steps, the event's file placed.
func TestAHarnessHoldingASnapshotsFreezeEndsItsEpisode(t *testing.T) {
	t.Parallel() // each case waits quota.FreezeWait on a disk of its own
	needQuota(t)
	th := testharnessBin(t)
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		os.Chmod(d, 0o755) // the sandbox's ids run the wrappers; the test's own directories only
	}
	wrapper := func(name, before string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+before+"exec "+th+" agent\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := wrapper("plain.sh", "")
	// heldBy is a harness that leaves the held writer, its command line
	// carrying marker (one a case: the cases run at once).
	heldBy := func(marker string) string {
		return wrapper(marker+".sh", `/usr/bin/python3 -c '
import os
r, w = os.pipe()
fd = os.open(".held", os.O_WRONLY | os.O_CREAT, 0o644)
os.splice(r, fd, 4096)
' `+marker+` </dev/null >/dev/null 2>&1 &
`)
	}
	// The wrappers exec testharness by its path: bound back read-only,
	// as the sandbox hides it where it lies under /tmp (a clone there).
	episode := func(t *testing.T, harness, checkpoints string) (*daemon, *rawWS) {
		cfg := writeConfig(t, fmt.Sprintf(`
name: held-freeze
harness:
  command: [%q]
sandbox: {read_only: [%q]}
limits: {disk: 64MiB}
episode:
  checkpoints: %s
events:
  - name: drop
    before_turn: 3
    file: {path: inbox/x.txt, content: "x\n"}
`, harness, filepath.Dir(th), checkpoints))
		d := startDaemon(t, spec{Flags: []string{"--isolation", "sandbox", "--config", cfg, "--max-sessions", "2"}})
		t.Cleanup(func() { quota.ThawBelow(d.Dir) }) // a failed run must not leave a frozen disk
		w := dialRaw(t, d, "/ws", nil)
		t.Cleanup(w.close)
		obsData(t, w.request(map[string]any{"type": "reset", "data": map[string]any{}}))
		return d, w
	}

	t.Run("control", func(t *testing.T) {
		t.Parallel()
		_, w := episode(t, plain, "every_turn")
		obsData(t, w.request(stepFrame("reply one")))
		obsData(t, w.request(stepFrame("reply two")))
		if got := responseOf(t, obsData(t, w.request(stepFrame("cat inbox/x.txt")))); !strings.Contains(got, "x") {
			t.Fatalf("control: the event's file was not placed before turn 3: %q", got)
		}
	})
	t.Run("held", func(t *testing.T) {
		t.Parallel()
		marker := "held-" + newMarker()
		d, w := episode(t, heldBy(marker), "every_turn")
		// The first turn waits for the splice to be under way.
		start := time.Now()
		obs := obsData(t, w.request(stepFrame("sleep 1s;;reply one")))
		md := meta(t, obs)
		t.Logf("step 1 answered after %s: done %v, %v: %v", time.Since(start).Round(time.Millisecond), obs["done"], md["error_type"], md["error"])
		if obs["done"] != true || md["error_type"] != "protocol_error" || !strings.Contains(fmt.Sprint(md["error"]), "held a write to its disk open") {
			t.Fatalf("step 1, whose checkpoint the harness held off: done %v, %v: %v; want the episode ended, protocol_error naming the held write",
				obs["done"], md["error_type"], md["error"])
		}
		nothingHeld(t, d, marker)
		if f := w.request(map[string]any{"type": "reset", "data": map[string]any{}}); f["type"] != "observation" {
			t.Fatalf("reset after the held freeze: %v", f)
		}
	})
	// A fork's snapshot held off: the fork goes on by replay, and the
	// parent's next step ends its episode, its harness stopped.
	t.Run("fork", func(t *testing.T) {
		t.Parallel()
		d, w := episode(t, heldBy("held-"+newMarker()), "off")
		obsData(t, w.request(stepFrame("sleep 1s;;reply one")))
		f := w.request(map[string]any{"type": "fork", "data": map[string]any{"count": 1}})
		t.Logf("fork: %v", f)
		md := meta(t, obsData(t, w.request(stepFrame("reply two"))))
		if md["error_type"] != "protocol_error" || !strings.Contains(fmt.Sprint(md["error"]), "held a write to its disk open") {
			t.Fatalf("the parent's step after a fork its harness held off: %v: %v; want protocol_error naming the held write", md["error_type"], md["error"])
		}
		// The sibling, a replay, runs a held writer of its own: only
		// the daemon's threads are looked at.
		nothingHeld(t, d, "")
	})
}

// nothingHeld waits up to 10 s for no thread of the daemon d to wait in
// D state and, unless marker is empty, the held writer (its command line
// has marker) to be gone.
func nothingHeld(t *testing.T, d *daemon, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for marker != "" && len(procsWith(marker)) > 0 || len(threadsInD(d.Pid())) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the episode ended: the held writer %v, daemon threads in D state %v", procsWith(marker), threadsInD(d.Pid()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procsWith lists the host pids whose command line contains s.
func procsWith(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, e.Name())
		}
	}
	return out
}

// threadsInD lists pid's threads in uninterruptible sleep, each with its
// kernel wait channel.
func threadsInD(pid int) []string {
	var out []string
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range tasks {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, e.Name()))
		if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'D' {
			wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, e.Name()))
			out = append(out, e.Name()+":"+string(wchan))
		}
	}
	return out
}
