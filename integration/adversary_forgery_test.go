package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// forgeTaskset writes a taskset of one Harbor task whose tests import
// /app/solution.py in the tests' own process (as `python3 -I -m pytest`
// does; a plain script stands in where /usr/bin/python3 lacks pytest) and
// then, as Harbor's layout does, write reward.txt themselves from the
// tests' exit status.
func forgeTaskset(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testbin.Missing(t, "/usr/bin/python3: %v", err)
	}
	dir := t.TempDir()
	task := filepath.Join(dir, "forge")
	files := map[string]string{
		"task.toml":              "version = \"1.0\"\n[verifier]\ntimeout_sec = 60.0\n",
		"instruction.md":         "write solution.py with add(a, b)\n",
		"environment/Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\n",
		"tests/test_solution.py": "import sys\nsys.path.insert(0, '/app')\nimport solution\nassert solution.add(2, 3) == 5, 'add(2, 3) != 5'\nprint('PASS')\n",
		"tests/test.sh": "#!/bin/bash\n/usr/bin/python3 -I /tests/test_solution.py\n" +
			"if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
	}
	testbin.WriteFiles(t, task, files)
	return dir
}

// TestAdversaryRewardForgery: against the real daemon, an agent writes a
// wrong /app/solution.py whose import-time code writes the verifier's
// reward.txt itself (and locks it 0444, or leaves through os._exit(0)
// before the tests can fail). Its episode's grade withholds the reward
// and names the writer; a right solution scores 1 and a wrong honest one
// 0, unmarked (the controls: the watch does not get in the way of
// Harbor's own layout).
func TestAdversaryRewardForgery(t *testing.T) {
	t.Parallel()
	d := advDaemon(t, isoSandbox, "tasks: {dir: "+forgeTaskset(t)+"}\n", "--max-sessions", "8")
	cases := []struct {
		name, solution string
		reward         any // float64, or nil for withheld
		tampered       bool
	}{
		{"right", "add = lambda a, b: a + b", 1.0, false},
		{"wrong", "add = lambda a, b: -1", 0.0, false},
		{"forged-0444", "import os; open('/logs/verifier/reward.txt', 'w').write('1'); os.chmod('/logs/verifier/reward.txt', 0o444); add = lambda a, b: -1", nil, true},
		{"forged-exit", "import os; open('/logs/verifier/reward.txt', 'w').write('1'); os._exit(0)", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openSession(t, d, isoSandbox)
			if got := s.say("write solution.py " + c.solution); got == "" {
				t.Fatalf("the agent wrote nothing")
			}
			f := s.w.request(map[string]any{"type": "step", "data": map[string]any{"message": "reply submitted", "metadata": map[string]any{"submit": true}}})
			obs := obsData(t, f)
			md := meta(t, obs)
			grade, _ := md["grade"].(map[string]any)
			if grade == nil || obs["done"] != true {
				t.Fatalf("the submitted episode was not graded: done %v, metadata %v", obs["done"], md)
			}
			tampered, _ := grade["tampered"].([]any)
			t.Logf("%s: reward %v, grade reward %v, tampered %v, watch %v", c.name, obs["reward"], grade["reward"], tampered, grade["reward_watch"])
			if grade["reward"] != c.reward {
				t.Errorf("grade reward %v, want %v", grade["reward"], c.reward)
			}
			if (len(tampered) > 0) != c.tampered {
				t.Errorf("tampered %v, want tampered=%v", tampered, c.tampered)
			}
			if c.tampered && obs["reward"] != nil {
				t.Errorf("a forged grade gave the episode reward %v", obs["reward"])
			}
		})
	}
}
