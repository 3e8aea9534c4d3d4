package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// python3 returns the interpreter, or skips the test when it is missing —
// except in CI (CI=true), where a missing prerequisite is a failure.
func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		testbin.Missing(t, "python3 not found: the OpenEnv Python client wire-compatibility check needs it")
	}
	return py
}

// pythonConfig serves what openenv_client_check.py expects: the test agent,
// the test tools, a rubric giving 1.0 to "add -> 5", three sessions.
func pythonConfig(t *testing.T) string {
	th := testharnessBin(t)
	return writeConfig(t, fmt.Sprintf(`
name: python-check
harness:
  command: [%q, agent]
tools:
  - name: demo
    command: [%q, tools]
rubrics:
  - name: sum
    type: match
    contains: "add -> 5"
`, th, th))
}

// TestPythonOpenEnvClient runs integration/python/openenv_client_check.py,
// which speaks the frames of OpenEnv's EnvClient/GenericEnvClient (§6) to a
// real daemon and checks the replies' shapes. It runs the script's own
// RFC 6455 client always, and the websockets package too when installed.
func TestPythonOpenEnvClient(t *testing.T) {
	t.Parallel()
	py := python3(t)
	script, err := filepath.Abs(filepath.Join("python", "openenv_client_check.py"))
	if err != nil {
		t.Fatal(err)
	}
	transports := []string{"minimal"}
	if exec.Command(py, "-c", "import websockets.sync.client").Run() == nil {
		transports = append(transports, "websockets")
	} else {
		t.Log("the websockets package is not installed: checking with the script's own RFC 6455 client only")
	}
	const token = "py-check-token"
	for _, tc := range []struct {
		name  string
		s     spec
		token string
		inURL bool // the token as the password of the base URL, no header: the unmodified client
	}{
		{"open", spec{Flags: []string{"--config", pythonConfig(t), "--max-sessions", "3"}}, "", false},
		{"token", spec{Flags: []string{"--config", pythonConfig(t), "--max-sessions", "3"}, Env: []string{"HARNESSD_API_TOKEN=" + token}}, token, false},
		{"url-credentials", spec{Flags: []string{"--config", pythonConfig(t), "--max-sessions", "3"}, Env: []string{"HARNESSD_API_TOKEN=" + token}}, token, true},
	} {
		for _, tr := range transports {
			t.Run(tc.name+"/"+tr, func(t *testing.T) {
				t.Parallel()
				d := startDaemon(t, tc.s)
				args := []string{script, "--base-url", d.URL, "--transport", tr}
				switch {
				case tc.inURL:
					args[2] = "http://harnessd:" + tc.token + "@" + d.Addr
				case tc.token != "":
					args = append(args, "--token", tc.token)
				}
				cmd := exec.Command(py, args...)
				cmd.Env = cleanEnv()
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), "PASS ") {
					t.Fatalf("openenv_client_check.py: %v\n%s", err, out)
				}
				t.Logf("%s", out)
				d.WaitSessions(0)
			})
		}
	}
	t.Run("unauthorized", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, spec{Flags: []string{"--config", pythonConfig(t)}, Env: []string{"HARNESSD_API_TOKEN=" + token}})
		for _, args := range [][]string{
			{"--base-url", d.URL, "--token", "wrong"},
			{"--base-url", "http://harnessd:wrong@" + d.Addr},
			{"--base-url", "http://" + token + "@" + d.Addr}, // the token as the user name is not a password
		} {
			cmd := exec.Command(py, append([]string{script, "--transport", "minimal"}, args...)...)
			cmd.Env = cleanEnv()
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "401") {
				t.Fatalf("%v was not refused: %v\n%s", args, err, out)
			}
		}
	})
}
