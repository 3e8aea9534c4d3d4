package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// run prints the final observation once, on one line ending in a newline:
// {"reward", "done", "metadata"} (the wire form repeated the metadata
// inside "observation"); wire.Observation still decodes it.
func TestRunPrintsTheObservationOnce(t *testing.T) {
	th := testbin.Path(t, "testharness")
	out, errOut, code := harnessd(t, nil, "run", "--isolation", "process", "-m", "hello", "--", th, "agent")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, ok := v["observation"]; ok || len(v) != 3 || strings.Count(out, `"episode_id"`) != 1 || !strings.HasSuffix(out, "}\n") {
		t.Errorf("stdout:\n%s", out)
	}
	var o wire.Observation
	if err := json.Unmarshal([]byte(out), &o); err != nil || o.ResponseText() != "echo: hello" || o.Metadata.TurnNumber != 1 {
		t.Errorf("decoded %+v (%v)", o, err)
	}
}

// On a terminal, run prompts "> " for each turn; the end of input (^D)
// ends the prompt's line, so what follows starts on a line of its own.
func TestRunEndsThePromptLineAtEndOfInput(t *testing.T) {
	th := testbin.Path(t, "testharness")
	ptmx, tty, err := pty.Open()
	if err != nil {
		testbin.Missing(t, "a pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	cmd := exec.Command(testbin.Path(t, "harnessd"), "run", "--isolation", "process", "--", th, "agent")
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go func() {
		ptmx.Write([]byte("hello\n"))
		ptmx.Write([]byte{4}) // ^D: end of input
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("run did not end at end of input:\n%s", stderr.String())
	}
	if e := stderr.String(); !strings.Contains(e, "> ") || !strings.HasSuffix(e, "> \n") {
		t.Errorf("stderr does not end the last prompt's line: %q", e)
	}
}

// A run that reaches max_turns ends normally: done, no error_type (it was
// error_type=max_turns, which OpenEnv's clients read as a failure), exit 0.
func TestRunToMaxTurnsIsANormalEnd(t *testing.T) {
	th := testbin.Path(t, "testharness")
	out, errOut, code := harnessd(t, nil, "run", "--isolation", "process", "--max-turns", "1", "-m", "hello", "-m", "never sent", "--", th, "agent")
	var o wire.Observation
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("%v: %s\n%s", err, out, errOut)
	}
	if code != exitOK || !o.Done || o.Metadata.ErrorType != "" || o.Metadata.Error != "" || o.Metadata.HarnessDone || strings.Contains(errOut, "error_type") {
		t.Errorf("exit %d, %s\n%s", code, out, errOut)
	}
}

// TestRunTakesRelativeFlagPathsFromItsDirectory: a relative --record-dir
// and a --tool program reached through ".." are the paths from the
// directory run is started in, as a configuration file's are from the
// file's. Both reached the episode as given: the sandbox refused the
// record directory ("hidden path \"./rec\" is not absolute") and the tool
// server's sandbox, showing only the directory it runs in, did not have
// "../bin/testharness".
func TestRunTakesRelativeFlagPathsFromItsDirectory(t *testing.T) {
	dir := t.TempDir()
	bin, work := filepath.Join(dir, "bin"), filepath.Join(dir, "work")
	for _, d := range []string{bin, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, testbin.Path(t, "testharness"), filepath.Join(bin, "testharness"))
	cmd := exec.Command(testbin.Path(t, "harnessd"), "run", "--record-dir", "./rec", "--tool", "stdio:../bin/testharness tools",
		"-m", `tool add {"a":2,"b":3}`, "--", "../bin/testharness", "agent")
	cmd.Dir = work
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == exitMissing {
		testbin.Missing(t, "%s", strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	var o wire.Observation
	if err := json.Unmarshal(stdout.Bytes(), &o); err != nil || o.ResponseText() != "add -> 5" {
		t.Errorf("observation %s (%v)", stdout.String(), err)
	}
	recs, _ := filepath.Glob(filepath.Join(work, "rec", "*.jsonl"))
	if len(recs) != 1 {
		t.Errorf("records in ./rec: %v", recs)
	}
}

// copyFile copies the executable src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
