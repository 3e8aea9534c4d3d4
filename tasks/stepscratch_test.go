package tasks_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/jsonl"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// thief is a line-protocol harness whose background thread, alive between
// turns, keeps reading the tests a step's grading copies into its scratch
// directory, at the path the session gave it (the episode's directory,
// bound read-only at /run/harnessd in the harness's sandbox), and copies
// what it finds to its own TMPDIR; each turn answers with what it holds
// and how many times the thread looked. It also lists the episode's
// directory, in case it may.
const thief = `#!/usr/bin/python3
import json, os, sys, threading, time
tmp = os.environ.get("TMPDIR", "/tmp")
loot, polls = os.path.join(tmp, "loot"), [0]
def steal():
    while True:
        polls[0] += 1
        names = ["step1-grade"]
        try:
            names += os.listdir("/run/harnessd")
        except Exception:
            pass
        for p in ["/run/harnessd/%s/tests/secret.txt" % n for n in names]:
            try:
                data = open(p).read()
                open(loot, "w").write(data)
            except Exception:
                pass
        time.sleep(0.002)
threading.Thread(target=steal, daemon=True).start()
print(json.dumps({"type": "ready"}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") != "message":
        continue
    try:
        got = open(loot).read().strip()
    except Exception:
        got = "nothing"
    open(os.path.join(os.environ["HARNESSD_WORKSPACE"], "done.txt"), "w").write("ok\n")
    print(json.dumps({"type": "turn_complete", "data": {"response": "loot=%s polls=%d" % (got, polls[0])}}), flush=True)
`

// TestStepTestsAreNotReadableByTheLiveHarness: between the steps of a
// multi-step task the harness stays alive (session.gradeTaskStep), and
// each step's grading copied the tests — the task-level tests/, which
// grade every later step too, with the step's own over them — into a
// scratch directory of the episode's directory, named step1-grade, mode
// 0755, its files 0444: the episode's directory is bound read-only at
// /run/harnessd in the harness's sandbox (mode 0711: not listable, but
// searchable by a name one can guess), so the harness's background thread
// read /run/harnessd/step1-grade/tests/secret.txt while step 1 was graded
// and answered step 2 with it. Now the scratch directories of a grading or
// a setup have an unguessable name. The control: the thread ran (polls)
// throughout, and step 1's turn, before any grading, holds nothing.
func TestStepTestsAreNotReadableByTheLiveHarness(t *testing.T) {
	needSandbox(t)
	dir := scratchDir(t)
	harnessPath := filepath.Join(dir, "thief")
	files := map[string]string{
		"task.toml": "schema_version = \"1.1\"\n[environment]\nworkdir = \"/app\"\n[verifier]\ntimeout_sec = 60.0\n" +
			"[[steps]]\nname = \"one\"\n[[steps]]\nname = \"two\"\n",
		"environment/Dockerfile":   "FROM ubuntu:24.04\nWORKDIR /app\n",
		"tests/secret.txt":         "HIDDEN-EXPECTATION-42\n",
		"steps/one/instruction.md": "step one\n",
		"steps/two/instruction.md": "step two\n",
		"steps/one/tests/test.sh":  "#!/bin/bash\ngrep -q HIDDEN /tests/secret.txt && echo 1 > /logs/verifier/reward.txt\nsleep 1\n",
		"steps/two/tests/test.sh":  "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
	}
	testbin.WriteFiles(t, filepath.Join(dir, "set", "steal"), files)
	if err := os.WriteFile(harnessPath, []byte(thief), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)

	cfg := &config.Config{
		Name:      "thief",
		Isolation: config.IsolationSandbox,
		Harness:   config.HarnessConfig{Config: harness.Config{Adapter: jsonl.Name, Command: []string{harnessPath}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		Tasks:     tasks.Source{Dir: filepath.Join(dir, "set")},
	}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	reg := &harness.Registry{}
	if err := reg.Add(jsonl.Name, jsonl.Factory); err != nil {
		t.Fatal(err)
	}
	shellSession(t, nil) // the shared supervisor
	s, err := session.NewSession(session.Options{Config: cfg, Supervisor: sup, Adapters: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })

	if _, err := s.Reset(ctxFor(t), session.ResetOptions{TaskID: "steal"}); err != nil {
		t.Fatal(err)
	}
	one, err := s.Step(ctxFor(t), wire.Action{Message: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := deref(one.Metadata.Response); !strings.HasPrefix(got, "loot=nothing ") {
		t.Fatalf("control: step 1's turn, before any grading, answered %q", got)
	}
	if one.Done || one.Reward == nil || *one.Reward != 1 {
		t.Fatalf("step 1: done %v reward %v grade %+v", one.Done, one.Reward, one.Metadata.Grade)
	}
	two, err := s.Step(ctxFor(t), wire.Action{Message: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := deref(two.Metadata.Response)
	t.Logf("step 2's turn: %s", got)
	if strings.Contains(got, "HIDDEN-EXPECTATION-42") {
		t.Fatalf("the live harness read the task's tests while step 1 was graded: %q", got)
	}
	var polls int
	if i := strings.Index(got, "polls="); i >= 0 {
		for _, c := range got[i+len("polls="):] {
			if c < '0' || c > '9' {
				break
			}
			polls = polls*10 + int(c-'0')
		}
	}
	if polls < 20 {
		t.Fatalf("control: the harness's thread looked only %d times (%q): it did not run through the grading", polls, got)
	}
}
