package tasks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// withheldStepTask writes a two-step Harbor task (Harbor's default
// multi_step_reward_strategy, mean): step one's tests always pass; step
// two's import /app/solution.py in the tests' own process (as pytest does)
// and write reward.txt from their exit status, as forgeryTask's do.
func withheldStepTask(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testbin.Missing(t, "/usr/bin/python3: %v", err)
	}
	dir := scratchDir(t)
	files := map[string]string{
		"task.toml": "schema_version = \"1.1\"\n[environment]\nworkdir = \"/app\"\n[verifier]\ntimeout_sec = 60.0\n" +
			"[[steps]]\nname = \"one\"\n[[steps]]\nname = \"two\"\n",
		"environment/Dockerfile":   "FROM ubuntu:24.04\nWORKDIR /app\n",
		"steps/one/instruction.md": "step one: nothing to do\n",
		"steps/one/tests/test.sh":  "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
		"steps/two/instruction.md": "step two: write solution.py with add(a, b)\n",
		"steps/two/tests/check.py": "import sys\nsys.path.insert(0, '/app')\nimport solution\nassert solution.add(2, 3) == 5\n",
		"steps/two/tests/test.sh":  "#!/bin/bash\n/usr/bin/python3 -I /tests/check.py\nif [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
	}
	testbin.WriteFiles(t, filepath.Join(dir, "set", "two-steps"), files)
	os.Chmod(dir, 0o755)
	return filepath.Join(dir, "set")
}

// playTwoSteps runs the task's two steps in a shell session (each turn's
// message is a shell script in the workspace) and returns step one's and
// the final observation.
func playTwoSteps(t *testing.T, set, second string) (one, two *wire.Observation) {
	t.Helper()
	s := shellSession(t, func(c *config.Config) {
		c.Tasks = tasks.Source{Dir: set}
		c.Episode.MaxTurns = 0
	})
	if _, err := s.Reset(ctxFor(t), session.ResetOptions{TaskID: "two-steps"}); err != nil {
		t.Fatal(err)
	}
	one, err := s.Step(ctxFor(t), wire.Action{Message: "true"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if one.Done || one.Reward == nil || *one.Reward != 1 {
		t.Fatalf("step one: done %v reward %v grade %+v", one.Done, rewardString(one.Reward), one.Metadata.Grade)
	}
	two, err = s.Step(ctxFor(t), wire.Action{Message: "cat > solution.py <<'EOF'\n" + second + "EOF\n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !two.Done {
		t.Fatalf("step two did not end the episode: %+v", two.Metadata)
	}
	return one, two
}

func rewardString(r *float64) string {
	if r == nil {
		return "null"
	}
	return fmt.Sprint(*r)
}

// TestAWithheldStepDoesNotRaiseAMultiStepTrialsReward (an outside red
// team): a multi-step task's trial reward (mean strategy, Harbor's
// default) was the mean over the steps "with a verifier result", as
// Harbor's, and a step whose reward the daemon withholds because the code
// under test wrote the reward file (tasks/watch.go checkWriters) counted as
// a step without one, left out of the mean. The agent that cannot solve
// step two scores 0.5 honestly; by making its solution write
// /logs/verifier/reward.txt at import (any value) the step was dropped and
// the trial scored 1.0, as if every step passed; a solution that SIGKILLs
// its tests' leader (test.sh's bash: same uid) did the same without a
// tampering mark. Now such a trial has no reward (null), the error naming
// the step. Controls: the honest wrong answer scores 0.5 and the right one
// 1.
func TestAWithheldStepDoesNotRaiseAMultiStepTrialsReward(t *testing.T) {
	needSandbox(t)
	set := withheldStepTask(t)

	// Controls.
	_, wrong := playTwoSteps(t, set, "def add(a, b):\n    return -1\n")
	if wrong.Reward == nil || *wrong.Reward != 0.5 {
		t.Fatalf("control, wrong solution: trial reward %s, want 0.5; grade %+v", rewardString(wrong.Reward), wrong.Metadata.Grade)
	}
	_, right := playTwoSteps(t, set, "def add(a, b):\n    return a + b\n")
	if right.Reward == nil || *right.Reward != 1 {
		t.Fatalf("control, right solution: trial reward %s, want 1; grade %+v", rewardString(right.Reward), right.Metadata.Grade)
	}

	for _, c := range []struct{ name, solution string }{
		// The forgery the watch detects: reward withheld for step two.
		{"tampered", "open('/logs/verifier/reward.txt', 'w').write('0')\ndef add(a, b):\n    return -1\n"},
		// No reward file at all: the tests' leader killed by the code under test.
		{"leader-killed", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(a, b):\n    return -1\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, two := playTwoSteps(t, set, c.solution)
			g := two.Metadata.Grade
			if g != nil && len(g.Steps) == 2 {
				t.Logf("step two's grade: reward %s error %q tampered %+v", rewardString(g.Steps[1].Reward), g.Steps[1].Error, g.Steps[1].Tampered)
			}
			if two.Reward != nil && *two.Reward > *wrong.Reward {
				t.Fatalf("the agent that failed step two scores %s (the honest wrong answer scores %s): "+
					"its sabotaged step was left out of the trial's mean (trial error %q, stopped %q)",
					rewardString(two.Reward), rewardString(wrong.Reward), g.Error, g.Stopped)
			}
			if two.Reward != nil || g == nil || !strings.Contains(g.Error, "step two produced no reward") {
				t.Errorf("trial reward %s, grade error %q; want null, naming step two", rewardString(two.Reward), g.Error)
			}
		})
	}
}
