package evaljob_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// startEngine runs the fake LLM in engine mode (token ids and logprobs,
// as vLLM answers) on 127.0.0.1 and returns its root URL.
func startEngine(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, testbin.Path(t, "testharness"), "llm", "--engine", "--addr", "127.0.0.1:0", "--quiet")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTENING ")
	if err != nil || !ok {
		t.Fatalf("the fake LLM did not listen: %q %v\n%s", line, err, stderr.String())
	}
	return url
}

// A job whose agent calls the model through the gateway (an engine
// upstream: training traffic) keeps each trial's training export, puts
// the engine's token ids into the trajectory, and counts the tokens into
// the result and the summary.
func TestModelTrialsKeepTheExportAndCountTokens(t *testing.T) {
	url := startEngine(t)
	set := filepath.Join(t.TempDir(), "ask.jsonl")
	os.WriteFile(set, []byte(`{"id": "ask", "instruction": "llm what is 2+3?", "grader": "true"}`+"\n"), 0o644)
	dir := filepath.Join(t.TempDir(), "job")
	code, stdout, stderr := eval(t, "--tasks", set, "--agent", noopHarness(t), "-k", "2", "-n", "2", "--job-dir", dir,
		"--model-url", url+"/v1", "--model", "engine-model", "--model-upstream", "engine")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	total := 0
	for _, r := range readResults(t, dir) {
		tdir := filepath.Join(dir, "trials", r.Trial)
		if r.Reward == nil || *r.Reward != 1 || r.Tokens == nil || r.Tokens.Prompt == 0 || r.Tokens.Completion == 0 {
			t.Errorf("trial %s: reward %v, tokens %+v", r.Trial, r.Reward, r.Tokens)
			continue
		}
		total += r.Tokens.Prompt + r.Tokens.Completion
		if _, err := os.Stat(filepath.Join(tdir, "record.export.json")); err != nil {
			t.Errorf("trial %s: no training export: %v", r.Trial, err)
		}
		doc, err := os.ReadFile(filepath.Join(tdir, "trajectory.json"))
		if err != nil {
			t.Fatal(err)
		}
		if p := validateATIF(t, doc); len(p) > 0 {
			t.Errorf("trial %s: %v", r.Trial, p)
		}
		// harnessd export makes the same trajectory from the trial's files.
		out, err := exec.Command(testbin.Path(t, "harnessd"), "export", "--format", "atif", filepath.Join(tdir, "record.jsonl")).Output()
		if err != nil || !bytes.Equal(out, doc) {
			t.Errorf("trial %s: harnessd export --format atif gives another trajectory (%v):\n%s\nvs trajectory.json:\n%s", r.Trial, err, out, doc)
		}
		var tr struct {
			Steps []struct {
				Metrics *struct {
					CompletionTokenIDs []int `json:"completion_token_ids"`
				} `json:"metrics"`
			} `json:"steps"`
		}
		json.Unmarshal(doc, &tr)
		ids := 0
		for _, s := range tr.Steps {
			if s.Metrics != nil {
				ids += len(s.Metrics.CompletionTokenIDs)
			}
		}
		if ids == 0 {
			t.Errorf("trial %s: the trajectory has no completion token ids", r.Trial)
		}
	}
	s := readSummary(t, dir)
	if tok := s.Agents[0].Tokens; tok.Prompt+tok.Completion != total || total == 0 {
		t.Errorf("summary tokens %+v, the trials' sum %d", tok, total)
	}
	if cell := fmt.Sprintf("%d/%d", s.Agents[0].Tokens.Prompt, s.Agents[0].Tokens.Completion); !strings.Contains(stdout, cell) {
		t.Errorf("the table lacks the tokens %s:\n%s", cell, stdout)
	}
}
