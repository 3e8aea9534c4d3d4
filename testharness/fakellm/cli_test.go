package fakellm_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// TestLLMCommand runs the real `testharness llm` binary: it announces its
// address on stdout and in --addr-file, serves the script, and exits 0 on
// SIGTERM.
func TestLLMCommand(t *testing.T) {
	bin := testbin.Path(t, "testharness")
	dir := t.TempDir()
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"rules": [{"when": {"nth": 1}, "reply": {"text": "from the file: {{user}}"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "addr")
	cmd := exec.Command(bin, "llm", "--addr", "127.0.0.1:0", "--script", script, "--addr-file", addrFile)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read LISTENING line: %v (stderr %s)", err, stderr.String())
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTENING ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q", line)
	}
	if b, err := os.ReadFile(addrFile); err != nil || string(b) != url+"\n" {
		t.Errorf("addr file %q (%v), want %q", b, err, url)
	}

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	c := conv{Model: "m", Users: []string{"hi"}, Tools: []tspec{{Name: "t"}}, Stream: true}
	if got := anthropicClient.do(t, hc, url, c); got.Text != "from the file: hi" {
		t.Errorf("first: %+v", got)
	}
	if got := anthropicClient.do(t, hc, url, c); got.Text != "MOCK-REPLY: hi" {
		t.Errorf("second: %+v", got)
	}
	tr.CloseIdleConnections()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	waited = true
	if err != nil {
		t.Errorf("exit after SIGTERM: %v (stderr %s)", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "rule=rule[0]") {
		t.Errorf("requests not logged to stderr: %s", stderr.String())
	}
}

// testharness llm --engine answers as an engine does (token ids), what
// harnessd --model-upstream engine needs; without it a user saw only
// missing_token_ids.
func TestLLMCommandEngineFlag(t *testing.T) {
	bin := testbin.Path(t, "testharness")
	for _, engine := range []bool{false, true} {
		args := []string{"llm", "--quiet"}
		if engine {
			args = append(args, "--engine")
		}
		cmd := exec.Command(bin, args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
		url := strings.TrimPrefix(strings.TrimSpace(line), "LISTENING ")
		body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"return_token_ids":true,"logprobs":true}`
		resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
		var got map[string]any
		json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if _, ok := got["prompt_token_ids"]; ok != engine {
			t.Errorf("--engine %v: prompt_token_ids present %v: %v", engine, ok, got)
		}
	}
}

func TestLLMCommandBadInput(t *testing.T) {
	bin := testbin.Path(t, "testharness")
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"rules": [{"when": {"nope": 1}, "reply": {}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"llm", "--script", bad},
		{"llm", "--script", bad + ".missing"},
		{"llm", "stray-arg"},
		{"llm", "--no-such-flag"},
		{"llm", "--addr", "256.0.0.1:0"},
	} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("%v: err %v, output %s", args, err, out)
		}
		if strings.Contains(string(out), "LISTENING") {
			t.Errorf("%v: listened anyway", args)
		}
	}
}
