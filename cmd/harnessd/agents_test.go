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

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// harnessd runs the real binary and returns its stdout, stderr and exit
// code.
func harnessd(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testbin.Path(t, "harnessd"), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// geminiOnly lays out an npm installation holding gemini only; it returns
// the root and its node_modules/.bin.
func geminiOnly(t *testing.T) (root, bin string) {
	t.Helper()
	root = t.TempDir()
	pkg := filepath.Join(root, "node_modules", "@google", "gemini-cli")
	os.MkdirAll(pkg, 0o755)
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@google/gemini-cli","version":"0.61.0"}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "gemini.js"), []byte("#!/bin/sh\n"), 0o755)
	bin = filepath.Join(root, "node_modules", ".bin")
	os.MkdirAll(bin, 0o755)
	if err := os.Symlink("../@google/gemini-cli/gemini.js", filepath.Join(bin, "gemini")); err != nil {
		t.Fatal(err)
	}
	return root, bin
}

// check --agents-dir finds the agents that agents --agents-dir finds (the
// flag was unknown, and check listed every agent as not installed).
func TestCheckFindsAgentsInTheAgentsDir(t *testing.T) {
	root, bin := geminiOnly(t)
	out, stderr, _ := harnessd(t, []string{"PATH=" + t.TempDir() + ":/usr/bin:/bin"}, "check", "--json", "--agents-dir", root)
	var rep struct {
		Agents []struct {
			Name      string `json:"name"`
			Installed bool   `json:"installed"`
			Path      string `json:"path"`
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	found := false
	for _, a := range rep.Agents {
		if a.Name == "gemini" {
			found = a.Installed && a.Path == filepath.Join(bin, "gemini")
		} else if a.Installed && strings.HasPrefix(a.Path, root) {
			t.Errorf("%s installed at %s", a.Name, a.Path)
		}
	}
	if !found {
		t.Errorf("check --agents-dir: gemini not found:\n%s", out)
	}
}

func TestAgentsCommand(t *testing.T) {
	root, bin := geminiOnly(t)
	noPath := []string{"PATH=" + t.TempDir()}

	out, stderr, code := harnessd(t, noPath, "agents", "--json", "--agents-dir", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []agentRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	byName := map[string]agentRow{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	g := byName["gemini"]
	if !g.Installed || g.Path != filepath.Join(bin, "gemini") || g.Version != "0.61.0" || g.Source != "agents-dir" ||
		g.Adapter != "acp" || g.Verified != "0.61.0" || strings.Join(g.Command, " ") != "gemini --acp --yolo --skip-trust" {
		t.Errorf("gemini row %+v", g)
	}
	if c := byName["claude-code"]; c.Installed || c.Adapter != "claude" {
		t.Errorf("claude-code row %+v", c)
	}
	if gs, ok := byName["goose"]; !ok || gs.Verified != "" {
		t.Errorf("goose row %+v", gs)
	}
	if len(rows) != 8 {
		t.Errorf("%d presets listed", len(rows))
	}

	// $HARNESSD_AGENTS_DIR stands for --agents-dir.
	out, _, code = harnessd(t, append(noPath, "HARNESSD_AGENTS_DIR="+bin), "agents")
	if code != 0 || !strings.Contains(out, "AGENT") || !strings.Contains(out, filepath.Join(bin, "gemini")) ||
		!strings.Contains(out, "Searched "+bin) {
		t.Errorf("table (exit %d):\n%s", code, out)
	}
	if _, _, code := harnessd(t, nil, "agents", "extra"); code != exitUsage {
		t.Errorf("extra argument: exit %d", code)
	}
}

func TestAgentFlags(t *testing.T) {
	empty := t.TempDir()
	env := []string{"PATH=" + empty}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--agent", "vim"}, []string{"unknown agent \"vim\"", "claude-code"}},
		{[]string{"run", "--agent", "goose", "--agents-dir", empty}, []string{"goose", "not found", empty}},
		{[]string{"serve", "--agent", "opencode", "--agents-dir", empty}, []string{"npm install opencode-ai@1.18.33"}},
		{[]string{"serve", "--agent", "gemini", "--model-url", "localhost:1", "--model-api-key-env", "HARNESSD_TEST_UNSET_KEY"},
			[]string{"HARNESSD_TEST_UNSET_KEY is not set", "want http:// or https://"}},
		{[]string{"serve"}, []string{"--agent NAME"}},
	} {
		_, stderr, code := harnessd(t, env, c.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d; stderr %s", c.args, code, exitUsage, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", c.args, stderr, w)
			}
		}
	}
	help, _, _ := harnessd(t, nil, "serve", "-h")
	for _, w := range []string{"--agent ", "--agents-dir ", "--model-url ", "--model ", "--model-api-key-env "} {
		if !strings.Contains(help, w) {
			t.Errorf("serve -h lacks %s", w)
		}
	}
	if strings.Contains(help, "agent:gemini") {
		t.Error("serve -h lists the presets' wrapping adapters as protocols")
	}
}

// Each problem of an agent preset's model is a line of its own, with the
// command's (or the file's) prefix and its own key: they were joined under
// "agent gemini: ", the lines after the first bare, and validate counted
// them as one problem.
func TestPresetModelProblemsAreALineEach(t *testing.T) {
	empty := t.TempDir()
	env := []string{"PATH=" + empty}
	_, stderr, code := harnessd(t, env, "run", "--agent", "gemini", "--agents-dir", empty, "--model-url", "localhost:1", "--model-api-key-env", "HARNESSD_TEST_UNSET_KEY", "-m", "x")
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != exitUsage || len(lines) != 3 {
		t.Fatalf("run: exit %d, stderr %q; want 2 and 3 lines", code, stderr)
	}
	for i, w := range []string{"harnessd run: agent gemini: gemini", "harnessd run: harness.model.api_key_env (--model-api-key-env): HARNESSD_TEST_UNSET_KEY is not set", "harnessd run: harness.model.url (--model-url): model url \"localhost:1\""} {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d %q, want it to start %q", i, lines[i], w)
		}
	}
	cfg := writeConfig(t, empty, "env.yaml", "harness:\n  agent: gemini\n  model: {url: \"localhost:1\", api_key_env: HARNESSD_TEST_UNSET_KEY}\n")
	_, stderr, code = harnessd(t, env, "validate", "--agents-dir", empty, cfg)
	for _, w := range []string{cfg + ": harness.agent: agent gemini: gemini", cfg + ": harness.model.api_key_env: HARNESSD_TEST_UNSET_KEY is not set", "harnessd validate: " + cfg + ": "} {
		if code != exitUsage || !strings.Contains(stderr, w) {
			t.Errorf("validate: exit %d, stderr %q lacks %q", code, stderr, w)
		}
	}
	if strings.Contains(stderr, "\nharness.model") || strings.Count(stderr, "harness.model.url:") != 1 {
		t.Errorf("validate: a problem's line without the file's prefix, or one twice: %q", stderr)
	}
}

// An api_key_env naming a variable the daemon's environment lacks is a
// problem at start-up without an agent preset too, as with one (the
// control): without a preset it passed validate and start-up, and every
// reset failed.
func TestAnUnsetModelKeyIsAProblemWithoutAPreset(t *testing.T) {
	empty := t.TempDir()
	env := []string{"PATH=" + empty}
	for name, body := range map[string]string{
		"no preset": "harness:\n  command: [/bin/sh, -c, 'exit 0']\n  model: {url: \"http://127.0.0.1:1\", api_key_env: HARNESSD_TEST_UNSET_KEY}\n",
		"a preset":  "harness:\n  agent: gemini\n  model: {url: \"http://127.0.0.1:1\", api_key_env: HARNESSD_TEST_UNSET_KEY}\n",
	} {
		cfg := writeConfig(t, empty, "env.yaml", body)
		_, stderr, code := harnessd(t, env, "validate", "--agents-dir", empty, cfg)
		if code != exitUsage || !strings.Contains(stderr, "harness.model.api_key_env: HARNESSD_TEST_UNSET_KEY is not set") {
			t.Errorf("%s: validate exit %d, stderr %q; want 2 naming harness.model.api_key_env", name, code, stderr)
		}
	}
}
