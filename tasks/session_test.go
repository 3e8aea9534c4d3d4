package tasks_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/oneshot"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

var (
	supOnce sync.Once
	sup     *process.Supervisor
)

// shellSession is a session whose harness runs each turn's message as a
// shell script (the exec adapter, sh -c), over the test taskset.
func shellSession(t *testing.T, edit func(*config.Config)) *session.Session {
	t.Helper()
	supOnce.Do(func() {
		var err error
		if sup, err = process.NewSupervisor(process.Options{}); err != nil {
			panic(err)
		}
	})
	cfg := &config.Config{
		Name:      "shell",
		Harness:   config.HarnessConfig{Config: harness.Config{Adapter: oneshot.Name, Command: []string{"sh"}, StopGrace: units.Duration(200 * time.Millisecond), Options: map[string]any{"command": []string{"sh", "-c", "{message}"}, "format": "text", "nonzero_ok": true}}},
		Episode:   config.EpisodeConfig{MaxTurns: 1},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		Tasks:     tasks.Source{Dir: "testdata/harbor", JSONL: "testdata/tasks.jsonl"},
	}
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	reg := &harness.Registry{}
	if err := reg.Add(oneshot.Name, oneshot.Factory); err != nil {
		t.Fatal(err)
	}
	s, err := session.NewSession(session.Options{Config: cfg, Supervisor: sup, Adapters: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// episode resets s on task id and runs one turn with msg.
func episode(t *testing.T, s *session.Session, id, msg string) (reset, final *wire.Observation) {
	t.Helper()
	reset, err := s.Reset(ctxFor(t), session.ResetOptions{TaskID: id})
	if err != nil || reset.Done {
		t.Fatalf("reset %s: %v %+v", id, err, reset)
	}
	final, err = s.Step(ctxFor(t), wire.Action{Message: msg}, nil)
	if err != nil {
		t.Fatalf("step: %v", err)
	}
	return reset, final
}

const solveHello = `test "$GREETING_FILE" = greeting.txt || exit 3
tr '\n' ' ' < src/words.txt | sed 's/ $//' > "$GREETING_FILE"; echo >> "$GREETING_FILE"; echo solved`

func TestSessionGradesTheEpisodeWithTheTasksTests(t *testing.T) {
	needSandbox(t)
	s := shellSession(t, nil)
	reset, final := episode(t, s, "hello", solveHello)
	if reset.Metadata.TaskID != "hello" || !strings.HasPrefix(reset.Metadata.TaskInstruction, "Create the file") || reset.Metadata.TaskMetadata["difficulty"] != "easy" {
		t.Errorf("reset metadata %+v", reset.Metadata)
	}
	g := final.Metadata.Grade
	if !final.Done || final.Reward == nil || *final.Reward != 1 || g == nil || g.Exit == nil || g.Exit.Code != 0 || !strings.Contains(g.StdoutTail, "PASS") {
		t.Fatalf("solved episode: done %v reward %v grade %+v (response %q)", final.Done, final.Reward, g, deref(final.Metadata.Response))
	}
	if d := final.Metadata.RewardDetails; len(d) != 1 || d[0].Type != "task" || *d[0].Score != 1 {
		t.Errorf("reward details %+v", d)
	}
	_, final = episode(t, s, "hello", "true")
	if final.Reward == nil || *final.Reward != 0 || !strings.Contains(final.Metadata.Grade.StdoutTail, "FAIL") {
		t.Errorf("empty episode: reward %v grade %+v", final.Reward, final.Metadata.Grade)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestEmptyFirstMessageIsTheInstruction(t *testing.T) {
	s := shellSession(t, func(c *config.Config) {
		c.Episode.MaxTurns = 0 // no grading: the instruction is not a script
		c.Harness.Options["command"] = []string{"printf", "%s", "{message}"}
	})
	if _, err := s.Reset(ctxFor(t), session.ResetOptions{TaskID: "inline-add"}); err != nil {
		t.Fatal(err)
	}
	obs, err := s.Step(ctxFor(t), wire.Action{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := deref(obs.Metadata.Response); !strings.Contains(got, "Fix add in calc.py") {
		t.Errorf("first turn with an empty message delivered %q, want the instruction", got)
	}
	obs, _ = s.Step(ctxFor(t), wire.Action{Message: ""}, nil)
	if got := deref(obs.Metadata.Response); got != "" {
		t.Errorf("second empty turn delivered %q, want nothing", got)
	}
}

// search is a turn that looks everywhere a harness in process isolation
// has of its own for the task's tests, solution and marker files.
const search = `for d in "$HARNESSD_WORKSPACE" "$HOME" "$TMPDIR" /tests /solution /logs /app; do
  [ -e "$d" ] && find "$d" \( -name 'harnessd_marker_*' -o -name test.sh -o -name solve.sh \) -print 2>/dev/null
  [ -e "$d" ] && grep -rl -e HARNESSD-TEST-MARKER -e HARNESSD-SOLUTION-MARKER "$d" 2>/dev/null
done; echo searched`

func TestHarnessSearchingForTheTestsFindsNothing(t *testing.T) {
	needSandbox(t)
	s := shellSession(t, nil)
	_, final := episode(t, s, "hello", search)
	if got := strings.TrimSpace(deref(final.Metadata.Response)); got != "searched" {
		t.Errorf("the harness found:\n%s", got)
	}
	if final.Metadata.Grade == nil || final.Metadata.Grade.Error != "" {
		t.Errorf("grade %+v", final.Metadata.Grade)
	}

	// Sandbox isolation: a harness tree with the workspace at the task's
	// WORKDIR and the taskset hidden, as Launch.Task describes it, finds
	// nothing either, not even at the taskset's host path.
	set, err := tasks.Load(tasks.Source{Dir: "testdata/harbor"})
	if err != nil {
		t.Fatal(err)
	}
	task, _ := set.Pick(tasks.Choice{ID: "hello"})
	root := scratchDir(t)
	ws := filepath.Join(root, "ws")
	os.MkdirAll(ws, 0o755)
	os.Chmod(root, 0o755)
	if err := task.Prepare(ws); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("testdata/harbor")
	out := runSandboxed(t, sandbox.Config{Workspace: ws, WorkspaceAt: task.WorkDir, Hide: set.HiddenPaths()},
		strings.ReplaceAll(search, "/app;", "/app "+abs+";")+
			"; find / -maxdepth 4 -path /proc -prune -o -name 'harnessd_marker_*' -print 2>/dev/null; ls /app")
	if !strings.Contains(out, "searched") || strings.Contains(out, "harnessd_marker") || strings.Contains(out, "test.sh") || !strings.Contains(out, "README.txt") {
		t.Errorf("sandboxed harness saw:\n%s", out)
	}
}

// runSandboxed runs a shell script in a sandbox made from cfg and returns
// its output.
func runSandboxed(t *testing.T, cfg sandbox.Config, script string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Name = "search"
	ctx := ctxFor(t)
	sb, err := sandbox.Start(ctx, cfg)
	if err != nil {
		w.Close()
		r.Close()
		t.Fatal(err)
	}
	defer sb.Close()
	done := make(chan []byte)
	go func() {
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		r.Close()
		done <- []byte(b.String())
	}()
	_, err = sb.Run(ctx, sandbox.Command{Path: "sh", Args: []string{"-c", script}, Env: []string{"PATH=/usr/bin:/bin", "HARNESSD_WORKSPACE=" + cfg.Workspace, "HOME=/nonexistent", "TMPDIR=/tmp"}, Stdout: w, Stderr: w})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return string(<-done)
}

func TestTaskLimitsAndMCPServers(t *testing.T) {
	bin := testbin.Path(t, "testharness")
	dir := t.TempDir()
	task := filepath.Join(dir, "set", "calc")
	os.MkdirAll(filepath.Join(task, "tests"), 0o755)
	os.WriteFile(filepath.Join(task, "task.toml"), []byte(`[agent]
timeout_sec = 0.5
[environment]
mcp_servers = [{ name = "calc", transport = "stdio", command = "`+bin+`", args = ["tools"] }]
`), 0o644)
	os.WriteFile(filepath.Join(task, "instruction.md"), []byte("add"), 0o644)
	os.WriteFile(filepath.Join(task, "tests", "test.sh"), []byte("echo 1 > /logs/verifier/reward.txt\n"), 0o755)
	s := shellSession(t, func(c *config.Config) {
		c.Tasks = tasks.Source{Dir: filepath.Join(dir, "set")}
		c.Episode.MaxTurns = 0
		c.Harness.Options["command"] = []string{"sh", "-c", "{message}"}
	})
	reset, err := s.Reset(ctxFor(t), session.ResetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if reset.Metadata.TaskID != "calc" || len(reset.Metadata.InjectedTools) == 0 {
		t.Errorf("the task's stdio MCP server is not served: %+v", reset.Metadata)
	}
	obs, err := s.Step(ctxFor(t), wire.Action{Message: "sleep 5"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Metadata.ErrorType != wire.FailureEpisodeTimeout || !strings.Contains(obs.Metadata.Error, "500ms") {
		t.Errorf("agent.timeout_sec 0.5: %s %q, want episode_timeout naming 500ms", obs.Metadata.ErrorType, obs.Metadata.Error)
	}
	if probeOnce().OK && (obs.Reward == nil || *obs.Reward != 1) {
		t.Errorf("a timed-out episode is graded: reward %v grade %+v", obs.Reward, obs.Metadata.Grade)
	}
}
