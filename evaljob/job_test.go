package evaljob_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/evaljob"
)

// oracleArgs are the oracle job over the fixture's tasks: hello and count
// (their solutions pass) and wrong (its solution fails).
func oracleArgs(harbor, wrong string) []string {
	return []string{"--tasks", harbor, "--tasks", wrong, "--oracle", "-n", "4", "--attempts", "2"}
}

func TestOracleJobGivesTheTablePassAtKAndSummary(t *testing.T) {
	harbor, wrong := taskFixture(t)
	dir := filepath.Join(t.TempDir(), "job")
	code, stdout, stderr := eval(t, append(oracleArgs(harbor, wrong), "--job-dir", dir)...)
	if code != 0 {
		t.Fatalf("exit %d (every trial ran, whatever the rewards: want 0)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"AGENT", "PASS@1", "PASS@2", "oracle  count", "oracle  hello", "oracle  wrong", "oracle  all", "6 of 6 trials finished, 0 without a reward"} {
		if !strings.Contains(strings.Join(strings.Fields(stdout), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("the table lacks %q:\n%s", want, stdout)
		}
	}
	s := readSummary(t, dir)
	if s.Trials != 6 || s.Finished != 6 || s.Unrewarded != 0 || s.Attempts != 2 {
		t.Fatalf("summary counts: %+v", s)
	}
	for task, want := range map[string]float64{"hello": 1, "count": 1, "wrong": 0} {
		r := row(t, s, "oracle", task)
		if r.Trials != 2 || r.Rewarded != 2 || r.MeanReward == nil || *r.MeanReward != want ||
			r.PassAtK["1"] != want || r.PassAtK["2"] != want || len(r.ErrorTypes) != 0 {
			t.Errorf("row %s: %+v, want mean and pass@1,2 %v", task, r, want)
		}
	}
	all := row(t, s, "oracle", "")
	if all.Trials != 6 || all.Passed != 4 || *all.MeanReward != 4.0/6 || all.PassAtK["1"] != 2.0/3 || all.PassAtK["2"] != 2.0/3 {
		t.Errorf("agent row: %+v, want 4 of 6 passed, mean and pass@k 2/3", all)
	}
	res := readResults(t, dir)
	if len(res) != 6 {
		t.Fatalf("results.jsonl has %d lines, want 6", len(res))
	}
	for _, r := range res {
		for _, f := range []string{"result.json", "grade.json", "solve.json"} {
			if _, err := os.Stat(filepath.Join(dir, "trials", r.Trial, f)); err != nil {
				t.Errorf("trial %s: %v", r.Trial, err)
			}
		}
		if r.Grade == nil || r.Grade.Exit == nil || len(r.Solve) != 1 || r.Solve[0].Exit == nil || r.DurationMS <= 0 {
			t.Errorf("trial %s: grade %+v, solve %+v, duration %v", r.Trial, r.Grade, r.Solve, r.DurationMS)
		}
	}
	var jf evaljob.JobFile
	if b, err := os.ReadFile(filepath.Join(dir, "job.json")); err != nil || json.Unmarshal(b, &jf) != nil {
		t.Fatalf("job.json: %v", err)
	}
	if want := []string{"count", "hello", "wrong"}; !reflect.DeepEqual(jf.TaskIDs, want) || jf.Attempts != 2 || jf.Concurrency != 4 {
		t.Errorf("job.json: %+v", jf)
	}

	// --json prints summary.json; a second job into the same directory is refused.
	dir2 := filepath.Join(t.TempDir(), "job")
	code, stdout, stderr = eval(t, append(oracleArgs(harbor, wrong), "--job-dir", dir2, "--json")...)
	var printed evaljob.Summary
	if err := json.Unmarshal([]byte(stdout), &printed); code != 0 || err != nil {
		t.Fatalf("--json: exit %d, %v:\n%s\n%s", code, err, stdout, stderr)
	}
	if !reflect.DeepEqual(timeless(&printed), timeless(readSummary(t, dir2))) || !reflect.DeepEqual(timeless(&printed), timeless(s)) {
		t.Errorf("--json printed %+v, summary.json is %+v", printed, readSummary(t, dir2))
	}
	if code, _, stderr := eval(t, append(oracleArgs(harbor, wrong), "--job-dir", dir)...); code != 2 || !strings.Contains(stderr, "not empty") {
		t.Errorf("a job into a used directory: exit %d, %s", code, stderr)
	}
}

func TestHarnessThatDoesNothingScoresZero(t *testing.T) {
	harbor, wrong := taskFixture(t)
	dir := filepath.Join(t.TempDir(), "job")
	noop := noopHarness(t)
	code, stdout, stderr := eval(t, "--tasks", harbor, "--tasks", wrong, "--agent", noop, "-n", "4", "--attempts", "2", "--job-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	s := readSummary(t, dir)
	if s.Finished != 6 || s.Unrewarded != 0 {
		t.Fatalf("summary: %+v\n%s", s, stderr)
	}
	for _, r := range append(s.Rows, s.Agents...) {
		if r.MeanReward == nil || *r.MeanReward != 0 || r.PassAtK["1"] != 0 || r.PassAtK["2"] != 0 || r.Passed != 0 {
			t.Errorf("row %s/%s: %+v, want 0 everywhere", r.Agent, r.Task, r)
		}
	}
	for _, r := range readResults(t, dir) {
		tdir := filepath.Join(dir, "trials", r.Trial)
		for _, f := range []string{"record.jsonl", "trajectory.json", "grade.json", "result.json"} {
			if _, err := os.Stat(filepath.Join(tdir, f)); err != nil {
				t.Errorf("trial %s: %v", r.Trial, err)
			}
		}
		doc, err := os.ReadFile(filepath.Join(tdir, "trajectory.json"))
		if err != nil {
			continue
		}
		if problems := validateATIF(t, doc); len(problems) > 0 {
			t.Errorf("trial %s: trajectory.json is not valid ATIF: %v", r.Trial, problems)
		}
		var tr struct {
			Steps []struct {
				Source  string `json:"source"`
				Message string `json:"message"`
			} `json:"steps"`
		}
		json.Unmarshal(doc, &tr)
		if len(tr.Steps) != 2 || tr.Steps[0].Source != "user" || tr.Steps[0].Message == "" ||
			tr.Steps[1].Message != "echo: "+tr.Steps[0].Message {
			t.Errorf("trial %s: trajectory steps %+v, want the instruction and its echo", r.Trial, tr.Steps)
		}
	}
}

// Several agents in one job: a row per agent and task, each agent's own
// figures, the agents in the order given.
func TestAgentsOfOneJobAreScoredApart(t *testing.T) {
	harbor, _ := taskFixture(t)
	dir := filepath.Join(t.TempDir(), "job")
	noop := noopHarness(t)
	code, stdout, stderr := eval(t, "--tasks", filepath.Join(harbor, "hello"), "--oracle", "--agent", noop, "--agent", noop,
		"-k", "2", "-n", "3", "--job-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	s := readSummary(t, dir)
	var names []string
	for _, a := range s.Agents {
		names = append(names, a.Agent)
	}
	if want := []string{"oracle", "testharness", "testharness-2"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("agents %v, want %v", names, want)
	}
	for agent, want := range map[string]float64{"oracle": 1, "testharness": 0, "testharness-2": 0} {
		if r := row(t, s, agent, "hello"); r.Rewarded != 2 || *r.MeanReward != want || r.PassAtK["2"] != want {
			t.Errorf("%s: %+v, want mean and pass@2 %v", agent, r, want)
		}
	}
}

// Without --agent, the --config file's harness is the job's agent, named
// as the environment is; a bare --resume finds it again through --config.
func TestConfigFileHarnessIsTheAgent(t *testing.T) {
	harbor, _ := taskFixture(t)
	bin := strings.TrimSuffix(noopHarness(t), " agent")
	cfg := filepath.Join(t.TempDir(), "env.yaml")
	os.WriteFile(cfg, []byte("name: noop-env\nharness:\n  command: ["+bin+", agent]\n"), 0o644)
	dir := filepath.Join(t.TempDir(), "job")
	if code, stdout, stderr := eval(t, "--config", cfg, "--tasks", filepath.Join(harbor, "hello"), "--job-dir", dir); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if r := row(t, readSummary(t, dir), "noop-env", "hello"); r.Rewarded != 1 || *r.MeanReward != 0 {
		t.Errorf("row: %+v", r)
	}
	if code, _, stderr := eval(t, "--resume", dir); code != 0 || !strings.Contains(stderr, "ran 0 trials (1 finished before)") {
		t.Errorf("resume: exit %d\n%s", code, stderr)
	}
}
