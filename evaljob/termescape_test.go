package evaljob_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHarnessTextCannotForgeEvalsTrialLines (an outside red team): without a
// terminal on stdout (`harnessd eval ... > out.txt`, `| tee`), eval writes a
// line per finished trial to stderr, which is then usually the operator's
// terminal (evaljob/terminal.go Update: "trial %s: no reward: %s: %s"),
// with the trial's error: a harness's failure message and stderr tail. As
// it came, a harness wrote escape sequences (OSC 52 sets the
// clipboard in terminals that allow it; ESC[2K/ESC[1A erase lines) and
// whole forged lines (a newline, then "trial ...: reward 1") into the
// operator's terminal.
//
// The control: the trial's line is written and names the failure.
func TestHarnessTextCannotForgeEvalsTrialLines(t *testing.T) {
	harbor, _ := taskFixture(t)
	bin, err := os.MkdirTemp("", "harnessd-eval-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	os.Chmod(bin, 0o755)
	script := filepath.Join(bin, "agent.sh")
	body := "#!/bin/sh\n" +
		`printf 'boom\033]52;c;cm0gLXJmIH4K\033\\\033[2K\ntrial hello__forged__1: reward 1 (1.0 s) [1/1]\n' >&2` + "\n" +
		"exit 3\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "job")
	code, stdout, stderr := eval(t, "--tasks", filepath.Join(harbor, "hello"), "--agent", script, "-n", "1", "--attempts", "1", "--job-dir", dir)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%q", code, stdout, stderr)
	if !strings.Contains(stderr, "no reward:") || !strings.Contains(stderr, "boom") {
		t.Fatalf("control: no trial line with the harness's failure on stderr")
	}
	if strings.Contains(stderr, "\x1b]52;c;") {
		t.Errorf("the harness's OSC 52 sequence reached eval's stderr raw")
	}
	if strings.Contains(stderr, "\ntrial hello__forged__1: reward 1") {
		t.Errorf("the harness forged a trial line on eval's stderr")
	}
}
