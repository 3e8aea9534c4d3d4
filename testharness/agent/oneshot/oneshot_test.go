package oneshot_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

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
