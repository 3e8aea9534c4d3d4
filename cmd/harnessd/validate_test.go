package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// writeConfig writes name in dir with body and returns its path.
func writeConfig(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeScript writes an executable shell script.
func writeScript(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), mode); err != nil {
		t.Fatal(err)
	}
}

func TestValidateValidConfig(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "env.yaml", `
harness:
  command: [`+th+`, agent]
tools:
  - name: env-tools
    command: [`+th+`, tools]
hide: [grade]
rubrics:
  - {name: grader, type: tool, tool: grade, arguments: {answer: "{{response}}"}}
`)
	out, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitOK || !strings.HasPrefix(out, cfg+": ok (") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if strings.Contains(out, "side door") {
		t.Errorf("a sandboxed tool server listed as a side door: %q", out)
	}
}

// TestValidateListsSideDoors: a tool server that runs on the host
// (isolation: host) is listed by validate as a side door.
func TestValidateListsSideDoors(t *testing.T) {
	th := testbin.Path(t, "testharness")
	cfg := writeConfig(t, t.TempDir(), "env.yaml", `
isolation: sandbox
harness:
  command: [`+th+`, agent]
tools:
  - name: on-host
    command: [`+th+`, tools]
    isolation: host
`)
	out, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitOK || !strings.Contains(out, `side door: tool server "on-host" runs on the host`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Every problem is reported at once, one line each naming the key and the
// cause: a missing harness, a missing tool binary, a non-executable tool
// program, and a rubric naming a tool that the working server lacks.
func TestValidateReportsEveryProblem(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "not-exec.sh"), "exit 0", 0o644)
	cfg := writeConfig(t, dir, "env.yaml", `
harness:
  command: [./no-such-harness]
tools:
  - name: real
    command: [`+th+`, tools]
  - name: missing
    command: [harnessd-test-no-such-tool-binary]
  - name: not-exec
    command: [./not-exec.sh]
rubrics:
  - {name: grader, type: tool, tool: no_such_grader}
`)
	out, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitUsage || out != "" {
		t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, out)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	want := []string{
		cfg + `: harness.command: program ` + filepath.Join(dir, "no-such-harness") + ` does not exist`,
		cfg + `: tools[1].command (tool server "missing"): program "harnessd-test-no-such-tool-binary" not found on PATH`,
		cfg + `: tools[2].command (tool server "not-exec"): program ` + filepath.Join(dir, "not-exec.sh") + ` is not executable`,
		cfg + `: rubrics[0].tool (rubric "grader"): names tool "no_such_grader", which no tool server that started offers`,
		"harnessd validate: " + cfg + ": 4 problems",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), errOut)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n got %q\nwant prefix %q", i, lines[i], w)
		}
	}
}

// A non-executable harness, and a rubric naming an unknown tool of a
// server that works: the cause lists the tools there are.
func TestValidateNonExecutableHarnessAndUnknownRubricTool(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "harness.sh"), "exit 0", 0o600)
	cfg := writeConfig(t, dir, "env.yaml", `
harness:
  command: [./harness.sh]
tools:
  - name: env-tools
    command: [`+th+`, tools, --only, "add,echo"]
rubrics:
  - {name: grader, type: tool, tool: grade}
`)
	_, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitUsage {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, w := range []string{
		cfg + ": harness.command: program " + filepath.Join(dir, "harness.sh") + " is not executable (mode -rw-------; chmod +x it)\n",
		cfg + `: rubrics[0].tool (rubric "grader"): names tool "grade", which no tool server offers (tools: add, echo)` + "\n",
		": 2 problems\n",
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
}

// Key errors and program errors come together; a tool server that starts
// but is not an MCP server is reported as such.
func TestValidateKeysAndBrokenToolServer(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "silent"), "exit 3", 0o755)
	cfg := writeConfig(t, dir, "env.yaml", `
harness:
  command: [./silent]
episode:
  max_turns: -1
tools:
  - name: broken
    command: [./silent]
`)
	_, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitUsage {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, w := range []string{
		cfg + ": episode.max_turns must not be negative\n",
		cfg + `: tools[0] (tool server "broken"): does not start: `,
		": 2 problems\n",
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}

	bad := writeConfig(t, dir, "typo.yaml", "harness:\n  comand: [x]\n")
	_, errOut, code = harnessd(t, nil, "validate", bad)
	if code != exitUsage || !strings.Contains(errOut, bad+": line 2: unknown key comand (did you mean command?)\n") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := harnessd(t, nil, "validate"); code != exitUsage || !strings.Contains(errOut, "want one configuration file") {
		t.Errorf("no argument: exit %d, stderr %q", code, errOut)
	}
}

// serve refuses to start, in one line naming the program and the knob,
// when the harness or a tool program cannot be executed.
func TestServeRefusesUnrunnablePrograms(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "plain"), "exit 0", 0o644)
	addr := filepath.Join(dir, "addr")
	base := []string{"serve", "--listen", "127.0.0.1:0", "--addr-file", addr}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--", "./does-not-exist"},
			`harnessd serve: refusing to start: the harness command (after "--"): program ` + filepath.Join(dir, "does-not-exist") + " does not exist\n"},
		{[]string{"--", filepath.Join(dir, "plain")},
			`harnessd serve: refusing to start: the harness command (after "--"): program ` + filepath.Join(dir, "plain") + " is not executable (mode -rw-r--r--; chmod +x it)\n"},
		{[]string{"--tool", "stdio:harnessd-test-no-such-tool-binary", "--", th, "agent"},
			`harnessd serve: refusing to start: tools[0].command (--tool) (tool server "tools1"): program "harnessd-test-no-such-tool-binary" not found on PATH`},
		{[]string{"--config", writeConfig(t, dir, "env.yaml", "harness:\n  command: [./gone]\n")},
			"harnessd serve: refusing to start: harness.command: program " + filepath.Join(dir, "gone") + " does not exist\n"},
	} {
		cmd := harnessdIn(t, dir, append(base, c.args...)...)
		if cmd.code != exitUsage || !strings.HasPrefix(cmd.stderr, c.want) || strings.Count(cmd.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line %q", c.args, cmd.code, cmd.stderr, c.want)
		}
		if _, err := os.Stat(addr); err == nil {
			t.Fatalf("%v: serve listened (wrote --addr-file) despite refusing", c.args)
		}
	}
}

// ranBinary is the outcome of one run of the binary.
type ranBinary struct {
	stdout, stderr string
	code           int
}

// harnessdIn runs the real binary in dir.
func harnessdIn(t *testing.T, dir string, args ...string) ranBinary {
	t.Helper()
	cmd := exec.Command(testbin.Path(t, "harnessd"), args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return ranBinary{out.String(), errb.String(), code}
}

// validate reports every problem of a file in one round: a bad duration
// used to hide the unknown keys, which hid the rest, and only the first
// rubric error was ever reported.
func TestValidateReportsAllProblemsInOneRound(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "h"), "exit 0", 0o755)
	cfg := writeConfig(t, dir, "env.yaml", `
harness:
  command: [./h]
  startup_timeout: soon
  comand: [x]
episode:
  max_turns: -1
  output_limit: lots
warm: 99
rubrics:
  - {name: r, type: match, pattern: "(", on: dnoe}
  - {name: s, type: bogus}
`)
	_, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitUsage {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, w := range []string{
		cfg + `: line 4: harness.startup_timeout: invalid duration "soon"`,
		cfg + ": line 5: unknown key comand",
		cfg + `: line 8: episode.output_limit: invalid size "lots"`,
		cfg + ": episode.max_turns must not be negative",
		cfg + ": warm must be 0 to 8, not 99",
		cfg + `: rubric "r": on must be`,
		cfg + `: rubric "r": pattern: error parsing regexp`,
		cfg + `: rubric "s": unknown type "bogus"`,
		": 8 problems\n",
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
}

// TestValidateSaysASimulatedUsersProgramIsUnreadableInItsSandbox: the
// user's program runs in a sandbox of its own as none of the daemon's ids,
// so a program only its owner may read (mode 0700) is reported by
// validate, with the cause; the control, the same program at 0755, is
// valid.
func TestValidateSaysASimulatedUsersProgramIsUnreadableInItsSandbox(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := t.TempDir()
	user := filepath.Join(dir, "customer.sh")
	cfg := writeConfig(t, dir, "env.yaml", `
harness:
  command: [`+th+`, agent]
user:
  command: [./customer.sh]
`)
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o700, false}, {0o755, true}} {
		writeScript(t, user, "cat >/dev/null", c.mode)
		if err := os.Chmod(user, c.mode); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := harnessd(t, nil, "validate", cfg)
		if c.ok {
			if code != exitOK {
				t.Fatalf("mode %04o: exit %d, stdout %q, stderr %q", c.mode, code, out, errOut)
			}
			continue
		}
		if code == exitOK || !strings.Contains(errOut, "user.command: in its sandbox "+user+" is visible but not readable by its uid") {
			t.Fatalf("mode %04o: exit %d, stdout %q, stderr %q", c.mode, code, out, errOut)
		}
	}
}

// "command: [sh, agent.sh]" with agent.sh next to the configuration passed
// validate, and every episode then failed to start: the harness runs in
// its workspace, where agent.sh is not. validate warns, naming the
// argument, the file it names here and the knobs; the configuration is
// still valid (a taskset may provide the file).
func TestValidateWarnsOfARelativeHarnessArgument(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "agent.sh"), "echo", 0o644)
	cfg := writeConfig(t, dir, "env.yaml", "harness:\n  command: [sh, agent.sh]\n")
	out, errOut, code := harnessd(t, nil, "validate", cfg)
	want := cfg + `: warning: harness.command[1]: "agent.sh" is a relative path, and the harness runs in its episode's workspace, where it names nothing; next to the configuration it names ` + filepath.Join(dir, "agent.sh")
	if code != exitOK || !strings.HasPrefix(out, cfg+": ok (") || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0, ok and %q", code, out, errOut, want)
	}
	// The absolute path is what the warning asks for: no warning.
	cfg = writeConfig(t, dir, "abs.yaml", "harness:\n  command: [sh, "+filepath.Join(dir, "agent.sh")+"]\n")
	if _, errOut, code := harnessd(t, nil, "validate", cfg); code != exitOK || errOut != "" {
		t.Errorf("absolute: exit %d, stderr %q", code, errOut)
	}
}

// validate reports a record_dir that serve and run could not make (a file
// in its way), as they would refuse it at start; it was "ok". The control:
// a record_dir whose parents do not exist yet passes, and validate does not
// make it.
func TestValidateReportsARecordDirThatCannotBeMade(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := writeConfig(t, dir, "bad.yaml", "harness:\n  command: [sh]\nrecord_dir: "+filepath.Join(file, "records")+"\n")
	if _, errOut, code := harnessd(t, nil, "validate", bad); code != exitUsage || !strings.Contains(errOut, "record_dir: "+file+" is not a directory") {
		t.Errorf("a record_dir under a file: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code := harnessd(t, nil, "serve", "--config", bad, "--listen", "127.0.0.1:0")
	if code != exitUsage || !strings.Contains(errOut, "record_dir") {
		t.Errorf("control: serve with that record_dir: exit %d, stderr %q", code, errOut)
	}
	fresh := filepath.Join(dir, "new", "records")
	good := writeConfig(t, dir, "good.yaml", "harness:\n  command: [sh]\nrecord_dir: "+fresh+"\n")
	if out, errOut, code := harnessd(t, nil, "validate", good); code != exitOK {
		t.Errorf("a record_dir to be made: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("validate made the record directory's parent: %v", err)
	}
}
