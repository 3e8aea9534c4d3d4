package integration

import (
	"fmt"
	"os"
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

// readmeExample returns the Python code block of README.md that drives
// harnessd with GenericEnvClient, exactly as printed.
func readmeExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(b), "```python\n")[1:] {
		code, _, ok := strings.Cut(block, "\n```")
		if ok && strings.Contains(code, "GenericEnvClient(") {
			return code + "\n"
		}
	}
	t.Fatal("README.md has no Python block using GenericEnvClient")
	return ""
}

// TestReadmePythonExample runs the README's Python example as printed
// against a real daemon, with integration/python/openenv_shim standing in
// for openenv.core.generic_client (PyPI is not reachable here, so the real
// package cannot be installed); the stand-in speaks the client's frames
// and result type (StepResult: observation, reward, done) and sends the
// example's 127.0.0.1:8000 to the test daemon's address.
func TestReadmePythonExample(t *testing.T) {
	t.Parallel()
	py := python3(t)
	code := readmeExample(t)
	shim, err := filepath.Abs(filepath.Join("python", "openenv_shim"))
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, spec{Flags: []string{"--config", pythonConfig(t)}})
	script := filepath.Join(t.TempDir(), "readme_example.py")
	if err := os.WriteFile(script, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script)
	cmd.Env = cleanEnv("PYTHONPATH="+shim, "HARNESSD_SHIM_ADDR="+d.Addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README example failed: %v\n%s\n--- the example:\n%s", err, out, code)
	}
	t.Logf("%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	// reward (0 from the match rubric, or None once an unscored turn's
	// reward is null), done, and the test agent's echo as the response.
	reward, rest, _ := strings.Cut(lines[0], " ")
	if (reward != "0" && reward != "0.0" && reward != "None") || rest != "False echo: fix the failing test" {
		t.Errorf("first line %q", lines[0])
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "'episode_id': 'ep-1'") || !strings.Contains(last, "'step_count': 1") {
		t.Errorf("state line %q", last)
	}
	if !strings.Contains(string(out), "\nturn_complete {") {
		t.Errorf("no turn_complete event printed")
	}
	d.WaitSessions(0)
}
