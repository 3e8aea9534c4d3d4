package agent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
)

func oneshot(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(testbin.Path(t, "testharness"), append([]string{"agent", "--protocol", "oneshot", "--session-dir", dir}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestOneShotSessions(t *testing.T) {
	dir := t.TempDir()
	out, _, code := oneshot(t, dir, "--", "reply one")
	var first struct {
		Type      string `json:"type"`
		SessionID string `json:"session_id"`
	}
	line, _, _ := strings.Cut(out, "\n")
	if err := json.Unmarshal([]byte(line), &first); err != nil || first.Type != "session" || code != 0 {
		t.Fatalf("first line %q (%v), exit %d", line, err, code)
	}
	if _, err := os.Stat(filepath.Join(dir, first.SessionID+".json")); err != nil {
		t.Fatal(err)
	}
	out, _, _ = oneshot(t, dir, "--format", "text", "--resume", first.SessionID, "history")
	if out != "history: reply one | history\n" {
		t.Fatalf("resumed: %q", out)
	}
	if _, errOut, code := oneshot(t, dir, "--resume", "ses-nope", "x"); code != 1 || !strings.Contains(errOut, "no session") {
		t.Fatalf("unknown session: %d %q", code, errOut)
	}
	if _, errOut, code := oneshot(t, dir, "--resume", "../../etc/passwd", "x"); code != 1 || !strings.Contains(errOut, "bad session id") {
		t.Fatalf("path in session id: %d %q", code, errOut)
	}
	if _, _, code := oneshot(t, dir, "--format", "xml", "x"); code != 2 {
		t.Fatalf("unknown format: exit %d", code)
	}
	if _, _, code := oneshot(t, dir, "reply a;;exit 7"); code != 7 {
		t.Fatalf("exit directive: exit %d", code)
	}
}

// readUntil reads r until the output so far contains want.
func readUntil(t *testing.T, r io.Reader, acc *bytes.Buffer, want string) {
	t.Helper()
	buf := make([]byte, 4096)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(acc.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", want, acc.String())
		}
		n, err := r.Read(buf)
		acc.Write(buf[:n])
		if err != nil {
			t.Fatalf("read: %v (have %q)", err, acc.String())
		}
	}
}

func TestTUIOverPipes(t *testing.T) {
	cmd := exec.Command(testbin.Path(t, "testharness"), "agent", "--protocol", "tui")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var acc bytes.Buffer
	readUntil(t, out, &acc, "\x1b[1;32mtestharness>\x1b[0m ")
	if !strings.Contains(acc.String(), "\x1b[?2004h") {
		t.Fatal("bracketed paste not enabled")
	}
	acc.Reset()
	io.WriteString(in, "reply hi\r")
	readUntil(t, out, &acc, "testharness>")
	if !strings.Contains(acc.String(), "\x1b[36mhi\x1b[0m\r\n") {
		t.Fatalf("coloured reply missing: %q", acc.String())
	}
	acc.Reset()
	// A bracketed paste is one message; backspace edits it.
	io.WriteString(in, "\x1b[200~reply a\r\nreply b\x1b[201~x\x7f\r")
	readUntil(t, out, &acc, "testharness>")
	acc.Reset()
	io.WriteString(in, "history\r")
	readUntil(t, out, &acc, "testharness>")
	if !strings.Contains(acc.String(), "history: reply hi | reply a\r\nreply b | history") {
		t.Fatalf("history %q", acc.String())
	}
	acc.Reset()
	io.WriteString(in, "sleep 30s\r")
	readUntil(t, out, &acc, "thinking")
	io.WriteString(in, "\x03")
	readUntil(t, out, &acc, "^C")
	readUntil(t, out, &acc, "testharness>")
	io.WriteString(in, "\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
