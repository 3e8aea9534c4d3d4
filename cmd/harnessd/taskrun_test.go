package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/harnessd/harnessd/internal/testbin"
)

const testTasks = "../../tasks/testdata"

func TestValidateReportsBrokenTasksByID(t *testing.T) {
	dir := t.TempDir()
	broken, _ := filepath.Abs(testTasks + "/broken")
	cfg := writeConfig(t, dir, "env.yaml", "harness:\n  command: [sh]\ntasks:\n  dir: "+broken+"\n")
	_, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, errOut)
	}
	for _, want := range []string{cfg + ": tasks: task bad-toml: task.toml:", cfg + ": tasks: task no-tests: no tests/test.sh", "2 problems"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	_, errOut, code = harnessd(t, nil, "serve", "--config", cfg, "--listen", "127.0.0.1:0")
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); code != exitUsage || len(lines) != 1 ||
		!strings.Contains(lines[0], "task bad-toml") || !strings.Contains(lines[0], "task no-tests") {
		t.Errorf("serve with a broken taskset: exit %d, stderr:\n%s\nwant one line naming both tasks", code, errOut)
	}
}

// runTask runs harnessd run --task and decodes its summary.
func runTask(t *testing.T, args ...string) (map[string]any, string, int) {
	t.Helper()
	out, errOut, code := harnessd(t, nil, append([]string{"run"}, args...)...)
	if strings.Contains(errOut, "start the grading sandbox") {
		testbin.Missing(t, "sandbox: %s", errOut)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("run %v: stdout %q: %v; stderr:\n%s", args, out, err, errOut)
	}
	return sum, errOut, code
}

func TestRunTaskOracleGradesOne(t *testing.T) {
	for _, id := range []string{"hello", "count"} {
		sum, errOut, code := runTask(t, "--task", testTasks+"/harbor/"+id, "--oracle")
		if code != exitOK || sum["reward"] != 1.0 || sum["task_id"] != id || !strings.Contains(errOut, "task "+id+": reward 1") {
			t.Errorf("oracle %s: exit %d %v\n%s", id, code, sum, errOut)
		}
	}
	_, errOut, code := harnessd(t, nil, "run", "--task", testTasks+"/broken/good", "--oracle")
	if code != exitUsage || !strings.Contains(errOut, "task good has no solution/solve.sh") {
		t.Errorf("oracle without a solution: exit %d\n%s", code, errOut)
	}
}

// The oracle must solve its task: a reward below 1 exits 1 (it exited 0,
// so a task author's CI could not catch a broken task).
func TestRunTaskOracleBelowOneFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello")
	if err := os.CopyFS(dir, os.DirFS(testTasks+"/harbor/hello")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "solution", "solve.sh"), []byte("#!/bin/bash\ntrue\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum, errOut, code := runTask(t, "--task", dir, "--oracle")
	if code != exitFailure || sum["reward"] != 0.0 || !strings.Contains(errOut, "the oracle scored 0, below 1") {
		t.Errorf("broken oracle: exit %d %v\n%s", code, sum, errOut)
	}
}

// A task's solve.sh output reaches the operator's terminal as visible
// escapes, each line marked as the solution's: it was printed as it came,
// so a task could set the terminal's clipboard (OSC 52) or forge a line of
// run's own ("task hello: reward 1"). The control: the script's raw stderr
// holds the escape and the line.
func TestRunTaskOracleStderrIsEscaped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello")
	if err := os.CopyFS(dir, os.DirFS(testTasks+"/harbor/hello")); err != nil {
		t.Fatal(err)
	}
	solve := filepath.Join(dir, "solution", "solve.sh")
	script := "#!/bin/bash\nprintf 'oops\\033]52;c;Zm9v\\007\\ntask hello: reward 1\\n' >&2\nexit 3\n"
	if err := os.WriteFile(solve, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	raw, _ := exec.Command("bash", solve).CombinedOutput()
	if !strings.Contains(string(raw), "\x1b]52;") || !strings.Contains(string(raw), "\ntask hello: reward 1\n") {
		t.Fatalf("control: the script's stderr %q", raw)
	}
	_, errOut, _ := runTask(t, "--task", dir, "--oracle")
	if strings.ContainsRune(errOut, 0x1b) || strings.Contains(errOut, "\ntask hello: reward 1") ||
		!strings.Contains(errOut, `  | oops\x1b]52;c;Zm9v\x07`) || !strings.Contains(errOut, "  | task hello: reward 1") {
		t.Errorf("the solution's stderr reached the terminal as %q", errOut)
	}
}

func TestRunTaskWithAnAgent(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "shell.yaml", `
harness:
  adapter: exec
  command: [sh]
  options: {command: [sh, -c, "{message}"], format: text, nonzero_ok: true}
`)
	solve := `tr '\n' ' ' < src/words.txt | sed 's/ $//' > "$GREETING_FILE"; echo >> "$GREETING_FILE"`
	sum, errOut, code := runTask(t, "--config", cfg, "--task", testTasks+"/harbor/hello", "-m", solve)
	if code != exitOK || sum["reward"] != 1.0 {
		t.Errorf("solved: exit %d %v\n%s", code, sum, errOut)
	}
	// Without -m the instruction is the turn: as a shell script it fails,
	// and the untouched workspace grades 0.
	sum, errOut, code = runTask(t, "--config", cfg, "--task", testTasks+"/harbor/hello")
	if code != exitOK || sum["reward"] != 0.0 {
		t.Errorf("instruction as the turn: exit %d %v\n%s", code, sum, errOut)
	}
}

// parquetTask is a row of a Parquet taskset in the config test below.
type parquetTask struct {
	TaskID string `parquet:"task_id"`
	Prompt string `parquet:"prompt"`
	Test   string `parquet:"test"`
	Level  string `parquet:"level"`
}

func TestValidateAcceptsAParquetTaskset(t *testing.T) {
	dir := t.TempDir()
	shard := filepath.Join(dir, "dataset", "data", "train-00000-of-00001.parquet")
	os.MkdirAll(filepath.Dir(shard), 0o755)
	if err := parquet.WriteFile(shard, []parquetTask{{"a", "do a", "true", "easy"}, {"b", "do b", "false", "hard"}}); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, "env.yaml", "harness:\n  command: [sh]\ntasks:\n  parquet: dataset\n  columns: {id: task_id, instruction: prompt, metadata: [level]}\n")
	out, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitOK || !strings.HasPrefix(out, cfg+": ok (") || !strings.Contains(out, "2 task(s)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	bad := writeConfig(t, dir, "bad.yaml", "harness:\n  command: [sh]\ntasks:\n  parquet: dataset\n  columns: {id: task_id, instruction: question}\n")
	_, errOut, code = harnessd(t, nil, "validate", bad)
	if code != exitUsage || !strings.Contains(errOut, shard) || !strings.Contains(errOut, `no column "question" (instruction)`) {
		t.Errorf("a mapping to a missing column: exit %d, stderr:\n%s", code, errOut)
	}
}

// TestTaskSourceByPath: --tasks takes a directory, a .jsonl file or a
// .parquet shard, each as its own kind of source.
func TestTaskSourceByPath(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"set.jsonl", "train-00000.parquet"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if s := taskSource(filepath.Join(dir, "set.jsonl")); s.JSONL == "" || s.Parquet != "" {
		t.Errorf("a .jsonl file: %+v", s)
	}
	if s := taskSource(filepath.Join(dir, "train-00000.parquet")); s.Parquet == "" || s.JSONL != "" {
		t.Errorf("a .parquet file: %+v", s)
	}
	if s := taskSource(dir); s.Dir != dir {
		t.Errorf("a directory: %+v", s)
	}
}

// Harbor's example tasks (tasks/testdata/harbor-examples: equivalents,
// see its README) run offline with the oracle: those that can grade 1
// and exit 0; hello-world's tests install uv at grading time and cannot,
// which is error_type grader_needs_network naming the command, exit 1 —
// not a reward of 0.
func TestRunTaskOracleHarborExamples(t *testing.T) {
	for _, id := range []string{"hello-workdir", "hello-user", "hello-mcp", "hello-multi-step-simple"} {
		sum, errOut, code := runTask(t, "--task", testTasks+"/harbor-examples/"+id, "--oracle")
		if code != exitOK || sum["reward"] != 1.0 || sum["error_type"] != nil {
			t.Errorf("oracle %s: exit %d %v\n%s", id, code, sum, errOut)
		}
	}
	sum, errOut, code := runTask(t, "--task", testTasks+"/harbor-examples/hello-world", "--oracle")
	grade, _ := sum["grade"].(map[string]any)
	if code != exitFailure || sum["reward"] != nil || sum["error_type"] != "grader_needs_network" || grade == nil ||
		!strings.Contains(grade["error"].(string), "test.sh line 3: `apt-get update`") ||
		!strings.Contains(errOut, "no reward (error_type grader_needs_network)") {
		t.Errorf("oracle hello-world: exit %d %v\n%s", code, sum, errOut)
	}
	// The multi-step task's grade has one grade per step.
	sum, _, _ = runTask(t, "--task", testTasks+"/harbor-examples/hello-multi-step-simple", "--oracle")
	steps, _ := sum["grade"].(map[string]any)["steps"].([]any)
	if len(steps) != 2 || steps[0].(map[string]any)["step"] != "create-file" || steps[1].(map[string]any)["reward"] != 1.0 {
		t.Errorf("multi-step grade: %v", sum["grade"])
	}
}

// validate refuses what harnessd cannot honour of a Harbor task, the key
// named, one line per task.
func TestValidateRefusesUnsupportedHarborKeys(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "tasks")
	mk := func(id, toml string) {
		d := filepath.Join(root, id)
		for f, c := range map[string]string{"task.toml": toml, "instruction.md": "do it\n", "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n"} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(d, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, f), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("healthcheck", "[environment.healthcheck]\ncommand = \"true\"\n")
	mk("windows", "[environment]\nos = \"windows\"\n")
	mk("collect", "[[verifier.collect]]\ncommand = \"true\"\n")
	mk("image", "[verifier.environment]\ndocker_image = \"grader:1\"\n")
	mk("fine", "[environment]\nworkdir = \"/srv\"\nenv = { A = \"1\" }\n[agent]\nuser = \"agent\"\n")
	cfg := writeConfig(t, dir, "env.yaml", "harness:\n  command: [sh]\ntasks:\n  dir: "+root+"\n")
	_, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, errOut)
	}
	for _, want := range []string{
		"task healthcheck: task.toml environment.healthcheck is not supported",
		"task windows: task.toml environment.os is not supported",
		"task collect: task.toml verifier.collect is not supported",
		"task image: task.toml verifier.environment.docker_image is not supported",
		"4 problems",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "task fine") {
		t.Errorf("a task harnessd honours is refused:\n%s", errOut)
	}
}

// A multi-step task with an agent: each step is one turn (its workdir/
// uploaded first), graded by its own tests; the final summary has the
// task's reward and each step's grade; a step below its min_reward ends
// the episode there.
func TestRunMultiStepTaskWithAnAgent(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "shell.yaml", `
harness:
  adapter: exec
  command: [sh]
  options: {command: [sh, -c, "{message}"], format: text, nonzero_ok: true}
`)
	task := testTasks + "/harbor-examples/hello-multi-step-simple"
	sum, errOut, code := runTask(t, "--config", cfg, "--task", task, "-m", "echo Hello > greeting.txt", "-m", "cat name.txt >> greeting.txt")
	grade, _ := sum["grade"].(map[string]any)
	steps, _ := grade["steps"].([]any)
	if code != exitOK || sum["reward"] != 1.0 || len(steps) != 2 || steps[1].(map[string]any)["step"] != "append-content" {
		t.Errorf("solved: exit %d %v\n%s", code, sum, errOut)
	}
	sum, errOut, code = runTask(t, "--config", cfg, "--task", task, "-m", "true", "-m", "cat name.txt >> greeting.txt")
	grade, _ = sum["grade"].(map[string]any)
	steps, _ = grade["steps"].([]any)
	if code != exitOK || sum["reward"] != 0.0 || len(steps) != 1 || !strings.Contains(grade["stopped"].(string), "reward=0 below min_reward 1") {
		t.Errorf("first step failed: exit %d %v\n%s", code, sum, errOut)
	}
}

// The harness runs as the task's [agent] user (hello-user's tests check
// whoami and the owner of what it wrote, as root); in process isolation,
// where the harness is the daemon's user, the task is refused by key.
func TestRunTaskAsTheAgentUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "task users need a range of ids: a root daemon")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "shell.yaml", `
harness:
  adapter: exec
  command: [sh]
  options: {command: [sh, -c, "{message}"], format: text, nonzero_ok: true}
`)
	task := testTasks + "/harbor-examples/hello-user"
	solve := `whoami > /app/whoami.txt; echo "Hello, world!" > /app/hello.txt`
	sum, errOut, code := runTask(t, "--config", cfg, "--task", task, "-m", solve)
	if code != exitOK || sum["reward"] != 1.0 {
		t.Errorf("as agent: exit %d %v\n%s", code, sum, errOut)
	}
	_, errOut, code = harnessd(t, nil, "run", "--config", cfg, "--isolation", "process", "--task", task, "-m", solve)
	if code == exitOK || !strings.Contains(errOut, `task.toml agent.user = "agent" cannot be honoured in process isolation`) {
		t.Errorf("process isolation: exit %d\n%s", code, errOut)
	}
}

// validate names the tasks whose tests install tools at grading time, with
// the command, and what their grader will have.
func TestValidateNotesGradersThatNeedTheNetwork(t *testing.T) {
	dir := t.TempDir()
	ex, _ := filepath.Abs(testTasks + "/harbor-examples")
	cfg := writeConfig(t, dir, "env.yaml", "harness:\n  command: [sh]\ntasks:\n  dir: "+ex+"\n")
	out, errOut, code := harnessd(t, nil, "validate", cfg)
	want := "task hello-world: the tests install tools at grading time (hello-world/tests/test.sh line 3: apt-get update): the grading sandbox has no network"
	if code != exitOK || !strings.Contains(out, want) || strings.Count(out, "install tools at grading time") != 1 {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// A step's [steps.agent] timeout_sec bounds its turn (Harbor bounds each
// step's agent run, not the whole trial): the turn times out, its step is
// graded, and the episode ends there.
func TestRunMultiStepTaskStepTimeout(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "shell.yaml", `
harness:
  adapter: exec
  command: [sh]
  options: {command: [sh, -c, "{message}"], format: text, nonzero_ok: true}
`)
	task := filepath.Join(dir, "task")
	if err := os.CopyFS(task, os.DirFS(testTasks+"/harbor-examples/hello-multi-step-simple")); err != nil {
		t.Fatal(err)
	}
	toml, _ := os.ReadFile(filepath.Join(task, "task.toml"))
	toml = []byte(strings.Replace(string(toml), "min_reward = 1.0\n", "min_reward = 1.0\n[steps.agent]\ntimeout_sec = 1\n", 1))
	if err := os.WriteFile(filepath.Join(task, "task.toml"), toml, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, errOut, _ := runTask(t, "--config", cfg, "--task", task, "-m", "echo Hello > greeting.txt; sleep 30", "-m", "cat name.txt >> greeting.txt")
	grade, _ := sum["grade"].(map[string]any)
	steps, _ := grade["steps"].([]any)
	if !strings.Contains(errOut, "turn_timeout") || len(steps) != 1 || sum["reward"] != 1.0 {
		t.Errorf("step timeout: %v\n%s", sum, errOut)
	}
}

// An agent's episode whose tests need the network: the observation's
// error_type is grader_needs_network and there is no reward (not 0).
func TestRunTaskGraderNeedsNetwork(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "shell.yaml", `
harness:
  adapter: exec
  command: [sh]
  options: {command: [sh, -c, "{message}"], format: text, nonzero_ok: true}
`)
	sum, errOut, code := runTask(t, "--config", cfg, "--task", testTasks+"/harbor-examples/hello-world", "-m", `echo "Hello, world!" > hello.txt`)
	if code != exitFailure || sum["reward"] != nil || sum["error_type"] != "grader_needs_network" ||
		!strings.Contains(errOut, "turn 1 reward=null done=true") {
		t.Errorf("exit %d %v\n%s", code, sum, errOut)
	}
}

// TestRunTaskServesItsMCPServerThroughPathsPython: Harbor's hello-mcp
// declares its MCP server as "python3 server.py"; started in its own
// sandbox, it serves its tool to the test agent whatever python3 is on
// the daemon's PATH (on this project's machines, a pyenv shim under
// root's HOME, which needs pyenv's libexec and the selected version bound
// into that sandbox; the shim failed there before).
func TestRunTaskServesItsMCPServerThroughPathsPython(t *testing.T) {
	th := testbin.Path(t, "testharness")
	sum, errOut, code := runTask(t, "--task", testTasks+"/harbor-examples/hello-mcp", "-m", "tools", "--", th, "agent")
	if code == exitUsage || sum["error_type"] != nil || !strings.Contains(errOut, "tools: get_secret") {
		t.Fatalf("hello-mcp with the test agent: exit %d %v\n%s", code, sum, errOut)
	}
}

// run --task ID runs the task of that id of the configuration's taskset
// (a JSONL row here), graded as run --task DIR grades: it took only a
// directory ("no task directory: stat .../fix-add"). An id the taskset has
// not is a usage error naming both readings.
func TestRunTaskByIDOfTheConfigurationsTaskset(t *testing.T) {
	jsonl, _ := filepath.Abs(testTasks + "/tasks.jsonl")
	cfg := writeConfig(t, t.TempDir(), "env.yaml", "harness:\n  command: ["+testbin.Path(t, "testharness")+", agent]\ntasks:\n  jsonl: "+jsonl+"\n")
	out, errOut, code := harnessd(t, nil, "run", "--config", cfg, "--task", "inline-echo", "-m", "write out.txt ok")
	var sum struct {
		TaskID string   `json:"task_id"`
		Reward *float64 `json:"reward"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &sum) != nil || sum.TaskID != "inline-echo" || sum.Reward == nil || *sum.Reward != 1 {
		t.Fatalf("run --task inline-echo: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	_, errOut, code = harnessd(t, nil, "run", "--config", cfg, "--task", "nope")
	if code != exitUsage || !strings.Contains(errOut, `--task nope: no such directory, nor a task of the configuration's taskset`) {
		t.Errorf("run --task nope: exit %d, stderr %q", code, errOut)
	}
}

// run --task ID --oracle runs the solution of the task of that id of the
// taskset (--tasks here, or a configuration's): it took only a directory
// ("no task directory: stat .../hello-workdir"). An id the taskset has not,
// or no taskset, is a usage error naming both readings.
func TestRunTaskOracleByIDOfTheTaskset(t *testing.T) {
	examples, _ := filepath.Abs(testTasks + "/harbor-examples")
	sum, errOut, code := runTask(t, "--tasks", examples, "--task", "hello-workdir", "--oracle")
	if code != exitOK || sum["reward"] != 1.0 || sum["task_id"] != "hello-workdir" {
		t.Fatalf("oracle by id: exit %d %v\n%s", code, sum, errOut)
	}
	cfg := writeConfig(t, t.TempDir(), "env.yaml", "harness:\n  command: [sh]\ntasks:\n  dir: "+examples+"\n")
	if sum, errOut, code := runTask(t, "--config", cfg, "--task", "hello-workdir", "--oracle"); code != exitOK || sum["reward"] != 1.0 {
		t.Fatalf("oracle by id of the configuration's taskset: exit %d %v\n%s", code, sum, errOut)
	}
	_, errOut, code = harnessd(t, nil, "run", "--tasks", examples, "--task", "nope", "--oracle")
	if code != exitUsage || !strings.Contains(errOut, "--task nope: no such directory, nor a task of the taskset") {
		t.Errorf("oracle of an unknown id: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = harnessd(t, nil, "run", "--task", "nope", "--oracle")
	if code != exitUsage || !strings.Contains(errOut, "--task nope: no such directory, and no taskset") {
		t.Errorf("oracle of an id without a taskset: exit %d, stderr %q", code, errOut)
	}
}

// run --task DIR --oracle --config: the task's tests reach the network
// through the configuration's egress proxy (network.egress: allow), as a
// session's grader does; the oracle graded offline whatever the
// configuration said, so a task whose tests fetch a tool failed its
// oracle only there. The tests here ask their proxy for a host the
// policy does not allow (refused by the proxy itself, before any lookup:
// no traffic leaves) and score 1 only on its 403. The control: without
// the configuration's network they have no proxy and score 0.
func TestRunTaskOracleGradesThroughTheConfigurationsEgress(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "proxy-check")
	files := map[string]string{
		"task.toml":         "",
		"instruction.md":    "x\n",
		"solution/solve.sh": "#!/bin/bash\ntrue\n",
		"tests/test.sh": "#!/bin/bash\ncode=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 http://not-allowed.example/ 2>/dev/null)\n" +
			"echo \"proxy $HTTP_PROXY answered $code\"\nif [ -n \"$HTTP_PROXY\" ] && [ \"$code\" = 403 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	}
	testbin.WriteFiles(t, task, files)
	cfg := writeConfig(t, dir, "env.yaml", "harness:\n  command: [sh]\nnetwork:\n  egress: allow\n  allow: [pypi.org]\n")
	sum, errOut, code := runTask(t, "--config", cfg, "--task", task, "--oracle")
	if code != exitOK || sum["reward"] != 1.0 {
		t.Errorf("oracle with network.egress allow: exit %d %v\n%s", code, sum, errOut)
	}
	sum, errOut, code = runTask(t, "--task", task, "--oracle")
	if sum["reward"] != 0.0 {
		t.Errorf("control, oracle without a network: exit %d %v (want reward 0: no proxy)\n%s", code, sum, errOut)
	}
}
