package evaljob_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/evaljob"
	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// taskFixture copies the tasks a job runs into a fresh directory: the
// Harbor tasks of tasks/testdata (hello, count) under harbor/, and this
// package's wrong task (its solution is wrong: the oracle scores 0). A
// copy, not the tree itself: a task whose WORKDIR is /work cannot hide a
// taskset under /work/... inside the agent's sandbox (the checkout lives
// there on the machines this was written on; see docs/eval.md).
func taskFixture(t testing.TB) (harbor, wrong string) {
	t.Helper()
	root := t.TempDir()
	harbor, wrong = filepath.Join(root, "harbor"), filepath.Join(root, "wrong")
	for src, dst := range map[string]string{"../tasks/testdata/harbor": harbor, "testdata/tasks/wrong": wrong} {
		if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v: %s", src, err, out)
		}
	}
	return harbor, wrong
}

// noopHarness is the command line of the test harness, copied into a
// directory every uid can traverse outside /work (the count task's WORKDIR
// /work would cover a program under /work inside the sandbox). Given a
// task's instruction it echoes it and touches nothing.
func noopHarness(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "evaljob-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "testharness")
	if out, err := exec.Command("cp", testbin.Path(t, "testharness"), bin).CombinedOutput(); err != nil {
		t.Fatalf("copy testharness: %v: %s", err, out)
	}
	return bin + " agent"
}

// eval runs bin/harnessd eval with args and returns its exit code,
// stdout and stderr.
func eval(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(testbin.Path(t, "harnessd"), append([]string{"eval"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("harnessd eval: %v", err)
	}
	return code, stdout.String(), stderr.String()
}

// readSummary reads a job's summary.json.
func readSummary(t *testing.T, dir string) *evaljob.Summary {
	t.Helper()
	var s evaljob.Summary
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// readResults reads a job's results.jsonl, failing on a line that is not
// a result.
func readResults(t *testing.T, dir string) []evaljob.Result {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []evaljob.Result
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r evaljob.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("results.jsonl line %d: %v: %s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, r)
	}
	return out
}

// row finds agent's row for task ("" for the agent's total).
func row(t *testing.T, s *evaljob.Summary, agent, task string) evaljob.Row {
	t.Helper()
	rows := s.Rows
	if task == "" {
		rows = s.Agents
	}
	for _, r := range rows {
		if r.Agent == agent && r.Task == task {
			return r
		}
	}
	t.Fatalf("no row for agent %s task %q in %+v", agent, task, s)
	return evaljob.Row{}
}

// timeless is s without its timings, for comparing jobs.
func timeless(s *evaljob.Summary) *evaljob.Summary {
	c := *s
	c.Rows = append([]evaljob.Row(nil), s.Rows...)
	c.Agents = append([]evaljob.Row(nil), s.Agents...)
	for _, rows := range [][]evaljob.Row{c.Rows, c.Agents} {
		for i := range rows {
			rows[i].DurationMS = evaljob.Durations{}
		}
	}
	return &c
}
