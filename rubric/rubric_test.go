package rubric

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
)

func TestMain(m *testing.M) {
	// Command rubrics run in sandboxes whose init is this binary.
	sandbox.Init()
	os.Exit(testbin.LeakCheck(m.Run(), sandbox.StopSpawners))
}

// inSandbox is an Input.Sandbox for tests: a fresh sandbox (seccomp, a
// private id range as root) with ws bound read-only at /work.
func inSandbox(t testing.TB, ws string) func(context.Context, []string) (*Sandbox, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r := sandbox.Probe(ctx, ""); !r.OK {
		testbin.Missing(t, "sandbox: %s", r.Detail)
	}
	return func(ctx context.Context, _ []string) (*Sandbox, error) {
		sb, err := sandbox.Start(ctx, sandbox.Config{
			Name: "rubric", Binds: []sandbox.Bind{{Src: ws, Dst: "/work"}}, Seccomp: true,
			Limits: sandbox.Limits{MemoryBytes: 256 << 20, Pids: 64},
		})
		if err != nil {
			return nil, err
		}
		return &Sandbox{Launcher: sb.Launcher(), Workspace: "/work", Close: sb.Close}, nil
	}
}

func sup(t *testing.T) *process.Supervisor {
	s, err := process.NewSupervisor(process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background(), 0) })
	return s
}

func w(f float64) *float64 { return &f }

func TestValidation(t *testing.T) {
	cases := map[string]Spec{
		"needs a command":        {Type: KindCommand},
		"exactly one of pattern": {Type: KindMatch},
		"pattern":                {Type: KindMatch, Pattern: "("},
		"unknown type":           {Type: "vibes"},
		"type is required":       {},
		`on must be`:             {Type: KindMatch, Contains: "x", On: "sometimes"},
		"needs a tool name":      {Type: KindTool},
	}
	for want, sp := range cases {
		_, err := New([]Spec{sp}, Deps{Supervisor: sup(t), CallTool: func(context.Context, string, json.RawMessage) (string, error) { return "", nil }})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("spec %+v: err %v, want %q", sp, err, want)
		}
	}
	if _, err := New([]Spec{{Type: KindTool, Tool: "grade"}}, Deps{}); !errors.Is(err, ErrNoToolCaller) {
		t.Errorf("tool rubric without caller: %v", err)
	}
	if _, err := New([]Spec{{Name: "a", Type: KindMatch, Contains: "x"}, {Name: "a", Type: KindMatch, Contains: "y"}}, Deps{}); err == nil {
		t.Error("duplicate names accepted")
	}
}

// Validate reports every problem of every spec at once: a bad on: used to
// hide a bad pattern, and the first bad spec the rest.
func TestValidateReportsEveryProblem(t *testing.T) {
	err := Validate([]Spec{
		{Name: "a", Type: KindMatch, Pattern: "(", On: "dnoe"},
		{Name: "b", Type: "bogus"},
		{Name: "a", Type: KindMatch, Contains: "x"},
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`rubric "a": on must be`, `rubric "a": pattern: error parsing regexp`, `rubric "b": unknown type "bogus"`, `rubric "a": duplicate name`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 4 {
		t.Errorf("%d lines, want 4:\n%v", n, err)
	}
}

func TestMatchAndWeightedSum(t *testing.T) {
	set, err := New([]Spec{
		{Name: "has-sum", Type: KindMatch, Pattern: `sum=\d+`, Weight: w(2)},
		{Name: "polite", Type: KindMatch, Contains: "please"},
		{Name: "final", Type: KindMatch, Contains: "sum", On: OnDone, Weight: w(10)},
	}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	got, res := set.Score(context.Background(), Input{Response: "sum=5"})
	if got != 2 || len(res) != 2 {
		t.Fatalf("turn score %v %+v, want 2 from two turn rubrics", got, res)
	}
	if *res[0].Score != 1 || *res[1].Score != 0 {
		t.Fatalf("scores %+v", res)
	}
	got, res = set.Score(context.Background(), Input{Response: "sum=5", Done: true})
	if got != 12 || len(res) != 3 {
		t.Fatalf("done score %v %+v, want 12", got, res)
	}
	if set.Applies(false) != true || (&Set{}).Applies(true) {
		t.Fatal("Applies wrong")
	}
}

func TestCommandScorer(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "answer.txt"), []byte("42"), 0o644)
	set, err := New([]Spec{
		// Reads the observation from stdin and a file from the workspace.
		{Name: "reads", Type: KindCommand, Command: []string{"sh", "-c",
			`grep -q '"response":"the answer"' && [ "$(cat answer.txt)" = 42 ] && echo "checking..." && echo 0.75`}},
		{Name: "exit0", Type: KindCommand, Command: []string{"true"}},
		{Name: "exit1", Type: KindCommand, Command: []string{"sh", "-c", "exit 1"}},
		{Name: "killed", Type: KindCommand, Command: []string{"sh", "-c", "echo dying >&2; kill -9 $$"}},
		{Name: "slow", Type: KindCommand, Command: []string{"sleep", "30"}, Timeout: units.Duration(200e6)},
		{Name: "json", Type: KindCommand, Command: []string{"echo", `{"score": 0.5, "why": "half"}`}},
	}, Deps{Supervisor: sup(t), Env: process.DefaultEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	total, res := set.Score(context.Background(), Input{Response: "the answer", Workspace: ws, TurnNumber: 1, Sandbox: inSandbox(t, ws)})
	byName := map[string]Result{}
	for _, r := range res {
		byName[r.Name] = r
	}
	score := func(n string) float64 {
		r := byName[n]
		if r.Score == nil {
			t.Fatalf("%s: no score, error %q", n, r.Error)
		}
		return *r.Score
	}
	if score("reads") != 0.75 || score("exit0") != 1 || score("exit1") != 0 || score("json") != 0.5 {
		t.Fatalf("scores: %+v", res)
	}
	if r := byName["killed"]; r.Score != nil || !strings.Contains(r.Error, "SIGKILL") || !strings.Contains(r.Error, "dying") {
		t.Fatalf("killed scorer: %+v", r)
	}
	if r := byName["slow"]; r.Score != nil || !strings.Contains(r.Error, "timed out") {
		t.Fatalf("slow scorer: %+v", r)
	}
	if total != 0.75+1+0+0.5 {
		t.Fatalf("total %v", total)
	}
}

func TestToolScorer(t *testing.T) {
	gotArgs := map[string]string{}
	call := func(_ context.Context, name string, args json.RawMessage) (string, error) {
		gotArgs[name] = string(args)
		switch name {
		case "grade":
			return `{"score": 0.9}`, nil
		case "words":
			return "no number here", nil
		}
		return "", errors.New("unknown tool " + name)
	}
	set, err := New([]Spec{
		{Name: "g", Type: KindTool, Tool: "grade", Arguments: map[string]any{"answer": "{{response}}", "n": []any{"{{turn}}"}}},
		{Name: "w", Type: KindTool, Tool: "words"},
		{Name: "x", Type: KindTool, Tool: "missing"},
	}, Deps{CallTool: call})
	if err != nil {
		t.Fatal(err)
	}
	total, res := set.Score(context.Background(), Input{Response: "ok", TurnNumber: 3})
	if total != 0.9 || res[0].Score == nil || res[1].Error == "" || !strings.Contains(res[2].Error, "unknown tool") {
		t.Fatalf("total %v results %+v", total, res)
	}
	if got := gotArgs["grade"]; got != `{"answer":"ok","n":["3"]}` {
		t.Fatalf("templated arguments %s", got)
	}
	if got := gotArgs["words"]; got != `{}` {
		t.Fatalf("no arguments should send {}, got %s", got)
	}
}

func TestCommandScorerNeverRunsWithoutASandbox(t *testing.T) {
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran")
	set, err := New([]Spec{{Name: "host", Type: KindCommand, Command: []string{"touch", marker}}}, Deps{Supervisor: sup(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, res := set.Score(context.Background(), Input{Workspace: ws})
	if len(res) != 1 || res[0].Score != nil || !strings.Contains(res[0].Error, ErrNoSandbox.Error()) {
		t.Fatalf("a command rubric without a sandbox: %+v", res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the scorer ran on the host")
	}
}
