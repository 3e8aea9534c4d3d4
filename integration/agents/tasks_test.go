package agents_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
	presets "github.com/harnessd/harnessd/harness/agents"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/testharness/fakellm"
)

// taskScript makes the model solve the hello task of tasks/testdata with
// the agent's own shell tool: the instruction gets a Bash call writing
// greeting.txt, its result gets a closing text, side calls get MOCK-AUX.
const taskScript = `{"rules": [
  {"name": "after-tool", "when": {"tool_result": true}, "reply": {"text": "TASK-DONE {{tool_result}}"}},
  {"name": "solve", "when": {"user_contains": "Create the file greeting.txt"},
   "reply": {"tool": "Bash", "arguments": {"command": "tr '\\n' ' ' < src/words.txt | sed 's/ $//' > greeting.txt && echo >> greeting.txt && echo WROTE", "description": "write the greeting"}}},
  {"name": "aux", "when": {}, "reply": {"text": "MOCK-AUX"}}
]}`

// TestRealAgentSolvesATask serves the hello task of tasks/testdata with
// Claude Code: the empty first message becomes the task's instruction, the
// scripted model has the agent write the file with its Bash tool, and the
// episode's end (max_turns 1) is graded by the task's own tests/test.sh in
// a sandbox.
func TestRealAgentSolvesATask(t *testing.T) {
	p := presets.ClaudeCode()
	s := &suite{harnessd: testbin.Path(t, "harnessd"), tools: testbin.Path(t, "testharness")}
	s.agentsDir = os.Getenv(presets.DirEnvVar)
	if s.agentsDir == "" {
		abs, _ := filepath.Abs(filepath.Join("node_modules", ".bin"))
		s.agentsDir = abs
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing(t, "node is not on PATH: the npm-installed agents cannot run")
	}
	if _, ok := presets.Locate(p, s.agentsDir, string(filepath.ListSeparator)); !ok {
		missing(t, "%s is not installed in %s: run `make agents` (npm ci in integration/agents)", p.Program, s.agentsDir)
	}
	sc, err := fakellm.ParseScript([]byte(taskScript))
	if err != nil {
		t.Fatal(err)
	}
	s.llm = fakellm.New(fakellm.Options{Script: sc})
	if s.llmURL, err = s.llm.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.llm.Close() })
	taskset, _ := filepath.Abs("../../tasks/testdata/harbor")
	d := s.serve(t, p, "--tasks", taskset, "--max-turns", "1")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env, err := client.Dial(ctx, d.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	obs, err := env.Reset(ctx, client.ResetOptions{TaskID: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Done || obs.Metadata.TaskID != "hello" {
		t.Fatalf("reset: done %v task %q: %s %s\n%s", obs.Done, obs.Metadata.TaskID, obs.Metadata.ErrorType, obs.Metadata.Error, obs.Metadata.StderrTail)
	}
	obs, err = env.Step(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	g := obs.Metadata.Grade
	if g != nil && strings.Contains(g.Error, "start the grading sandbox") {
		testbin.Missing(t, "sandbox: %s", g.Error)
	}
	if !obs.Done || g == nil || obs.Reward == nil || *obs.Reward != 1 || !strings.Contains(g.StdoutTail, "PASS") {
		t.Fatalf("episode: done %v reward %v grade %+v\nresponse %q\nevents:\n%s", obs.Done, obs.Reward, g, responseOf(obs), eventLines(obs.Metadata.TurnEvents))
	}
	if resp := responseOf(obs); !strings.Contains(resp, "TASK-DONE") || !strings.Contains(resp, "WROTE") {
		t.Errorf("response %q, want TASK-DONE with the Bash tool's output", resp)
	}
}
