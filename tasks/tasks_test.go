package tasks_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/tasks"
)

func loadTestSet(t testing.TB) *tasks.Set {
	t.Helper()
	s, err := tasks.Load(tasks.Source{Dir: "testdata/harbor", JSONL: "testdata/tasks.jsonl"})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return s
}

func pick(t testing.TB, s *tasks.Set, id string) *tasks.Task {
	t.Helper()
	task, err := s.Pick(tasks.Choice{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestLoadsHarborTask(t *testing.T) {
	s := loadTestSet(t)
	var ids []string
	for _, task := range s.Tasks() {
		ids = append(ids, task.ID)
	}
	if want := []string{"count", "hello", "inline-add", "inline-echo"}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v (directories in name order, then JSONL lines)", ids, want)
	}
	h := pick(t, s, "hello")
	if h.Name != "harnessd/hello" || h.WorkDir != "/app" || h.AgentTimeout != 120*time.Second || h.VerifierTimeout != 60*time.Second {
		t.Errorf("hello: name %q workdir %q agent %v verifier %v", h.Name, h.WorkDir, h.AgentTimeout, h.VerifierTimeout)
	}
	if !slices.Equal(h.Env, []string{"GREETING_FILE=greeting.txt", "TASK_HOME=/app"}) {
		t.Errorf("env %v", h.Env)
	}
	if h.Limits.MemoryMB != 512 || h.Limits.CPUs != 1 || h.AllowInternet == nil || *h.AllowInternet {
		t.Errorf("limits %+v allow_internet %v", h.Limits, h.AllowInternet)
	}
	if h.Metadata["difficulty"] != "easy" || !strings.HasPrefix(h.Instruction, "Create the file greeting.txt") {
		t.Errorf("metadata %v instruction %q", h.Metadata, h.Instruction)
	}
	warn := strings.Join(h.Warnings, "\n")
	for _, w := range []string{"Dockerfile RUN ignored", "Dockerfile CMD ignored", "storage_mb ignored", "build_timeout_sec ignored"} {
		if !strings.Contains(warn, w) {
			t.Errorf("warnings lack %q:\n%s", w, warn)
		}
	}
	c := pick(t, s, "count")
	warn = strings.Join(c.Warnings, "\n")
	for _, w := range []string{"unknown_knob ignored", "COPY to /etc/data.txt not honoured", `mcp_servers "calc" ignored`} {
		if !strings.Contains(warn, w) {
			t.Errorf("count's warnings lack %q:\n%s", w, warn)
		}
	}
	if c.WorkDir != "/work" || len(c.MCPServers) != 1 || c.MCPServers[0].Transport != "sse" {
		t.Errorf("count: workdir %q mcp %+v", c.WorkDir, c.MCPServers)
	}
}

func TestBrokenTasksAreReportedByID(t *testing.T) {
	_, err := tasks.Load(tasks.Source{Dir: "testdata/broken"})
	var le *tasks.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("load broken: %v, want a *LoadError", err)
	}
	got := map[string]string{}
	for _, p := range le.Problems {
		got[p.ID] = p.Reason
	}
	if len(got) != 2 || !strings.Contains(got["no-tests"], "no tests/test.sh") || !strings.Contains(got["bad-toml"], "task.toml") {
		t.Fatalf("problems %v, want no-tests and bad-toml", got)
	}
	if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "2 broken tasks: ") || !strings.Contains(err.Error(), "task no-tests") {
		t.Errorf("error %q: want one line naming each task", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.jsonl"), []byte(`{"id":"a","instruction":"x","grader":"true"}
{"id":"a","instruction":"y","grader":"true"}
{"id":"b","instruction":"y","files":{"../up":"x"},"grader":"true"}
{"id":"c","instruction":""}
not json
`), 0o644)
	_, err = tasks.Load(tasks.Source{JSONL: filepath.Join(dir, "t.jsonl")})
	for _, want := range []string{"task a: id already used", "task b: files: path \"../up\" leaves", "task c: no instruction", "t.jsonl:5: invalid JSON"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("jsonl error %v lacks %q", err, want)
		}
	}
}

func TestPickByIDIndexAndSeed(t *testing.T) {
	s := loadTestSet(t)
	idx := func(i int) *int { return &i }
	seed := func(i int64) *int64 { return &i }
	cases := []struct {
		c    tasks.Choice
		want string
	}{
		{tasks.Choice{ID: "inline-add"}, "inline-add"},
		{tasks.Choice{Index: idx(0)}, "count"},
		{tasks.Choice{Index: idx(3)}, "inline-echo"},
		{tasks.Choice{Seed: seed(1)}, "hello"},
		{tasks.Choice{Seed: seed(6)}, "inline-add"}, // 6 mod 4 = 2
		{tasks.Choice{ID: "hello", Seed: seed(0)}, "hello"},
	}
	for _, c := range cases {
		task, err := s.Pick(c.c)
		if err != nil || task.ID != c.want {
			t.Errorf("pick %+v: %v %v, want %s", c.c, task, err, c.want)
		}
	}
	for _, c := range []tasks.Choice{{ID: "nope"}, {Index: idx(4)}, {Index: idx(-1)}} {
		if _, err := s.Pick(c); !errors.Is(err, tasks.ErrNoSuchTask) {
			t.Errorf("pick %+v: %v, want ErrNoSuchTask", c, err)
		}
	}
	if _, err := s.Pick(tasks.Choice{ID: "hello", Index: idx(1)}); err == nil {
		t.Error("task_id with task_index accepted")
	}
	var order []string
	for range 5 {
		task, _ := s.Pick(tasks.Choice{})
		order = append(order, task.ID)
	}
	if want := []string{"count", "hello", "inline-add", "inline-echo", "count"}; !slices.Equal(order, want) {
		t.Errorf("round-robin %v, want %v", order, want)
	}
}

func TestPrepareCopiesTheEnvironmentOnly(t *testing.T) {
	s := loadTestSet(t)
	ws := t.TempDir()
	if err := pick(t, s, "hello").Prepare(ws); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(ws, p)
			files = append(files, rel)
		}
		return nil
	})
	if want := []string{"README.txt", "notes/words-copy.txt", "src/words.txt"}; !slices.Equal(files, want) {
		t.Fatalf("workspace holds %v, want %v", files, want)
	}
	ws2 := t.TempDir()
	if err := pick(t, s, "inline-echo").Prepare(ws2); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws2, "notes/readme.md")); string(b) != "write ok\n" {
		t.Errorf("inline file: %q", b)
	}
}

// grade prepares a workspace for task, lets solve change it, and grades it.
func grade(t *testing.T, task *tasks.Task, solve func(ws string)) *tasks.Result {
	t.Helper()
	root := scratchDir(t)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)
	if err := task.Prepare(ws); err != nil {
		t.Fatal(err)
	}
	if solve != nil {
		solve(ws)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := task.Grade(ctx, tasks.RunOptions{Workspace: ws, Scratch: filepath.Join(root, "grade")})
	if err != nil {
		t.Fatalf("grade %s: %v", task.ID, err)
	}
	return res
}

func TestOracleGradesOneAndEmptyZero(t *testing.T) {
	needSandbox(t)
	s := loadTestSet(t)
	for _, id := range []string{"hello", "count"} {
		task := pick(t, s, id)
		empty := grade(t, task, nil)
		if empty.Reward == nil || *empty.Reward != 0 {
			t.Errorf("%s: empty run: %+v, want reward 0", id, empty)
		}
		oracle := grade(t, task, func(ws string) {
			root := scratchDir(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := task.Solve(ctx, tasks.RunOptions{Workspace: ws, Scratch: root + "/solve"})
			if err != nil || r.ExitCode != 0 {
				t.Fatalf("%s: solve: %+v %v", id, r, err)
			}
		})
		if oracle.Reward == nil || *oracle.Reward != 1 {
			t.Errorf("%s: oracle run: %+v, want reward 1", id, oracle)
		}
		if id == "hello" && !strings.Contains(oracle.Stdout, "PASS") {
			t.Errorf("hello: the tests' stdout tail %q lacks PASS", oracle.Stdout)
		}
		if id == "count" && oracle.Scores["format"] != 1 {
			t.Errorf("count: scores %v", oracle.Scores)
		}
	}
}

func TestJSONLGraderExitStatusIsTheReward(t *testing.T) {
	needSandbox(t)
	s := loadTestSet(t)
	task := pick(t, s, "inline-add")
	if r := grade(t, task, nil); r.Reward == nil || *r.Reward != 0 || r.ExitCode == 0 {
		t.Errorf("unsolved: %+v", r)
	}
	r := grade(t, task, func(ws string) {
		os.WriteFile(filepath.Join(ws, "calc.py"), []byte("def add(a, b):\n    return a + b\n"), 0o644)
	})
	if r.Reward == nil || *r.Reward != 1 {
		t.Errorf("solved: %+v", r)
	}
	echo := pick(t, s, "inline-echo")
	r = grade(t, echo, func(ws string) { os.WriteFile(filepath.Join(ws, "out.txt"), []byte("ok"), 0o644) })
	if r.Reward == nil || *r.Reward != 1 {
		t.Errorf("inline-echo at /srv: %+v", r)
	}
}

func TestGraderTimeoutAndBadRewardAreReported(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.jsonl"), []byte(`{"id":"slow","instruction":"x","grader":"sleep 30","verifier_timeout_sec":0.5}
{"id":"garbage","instruction":"x","grader":"echo lots > /logs/verifier/reward.txt; echo oops >&2"}
`), 0o644)
	s, err := tasks.Load(tasks.Source{JSONL: filepath.Join(dir, "t.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	r := grade(t, pick(t, s, "slow"), nil)
	if !r.TimedOut || r.Reward != nil || !strings.Contains(r.Error, "exceeded") {
		t.Errorf("slow grader: %+v, want timed out without reward", r)
	}
	r = grade(t, pick(t, s, "garbage"), nil)
	if r.Reward != nil || !strings.Contains(r.Error, "not a number") || !strings.Contains(r.Stderr, "oops") {
		t.Errorf("garbage reward: %+v", r)
	}
}
