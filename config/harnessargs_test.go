package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// "python3 agent.py" with agent.py next to the configuration names a file
// the harness, running in its episode's workspace, cannot find: it is
// reported with the path it names here. An absolute path, a flag, an
// argument naming nothing here and one the workspace template provides
// are not.
func TestRelativeHarnessArgsNamingFilesHereAreReported(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "seed")
	for _, p := range []string{"agent.py", "prompts/a.txt", "seed/prompts/a.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644)
	}
	cfg, err := ParseConfig([]byte("harness:\n  command: [python3, -u, agent.py, --prompts, prompts/a.txt, out.txt, "+filepath.Join(dir, "agent.py")+"]\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.RelativeHarnessArgs(dir, "next to the configuration")
	if len(got) != 2 || got[0].Key != "harness.command[2]" || got[1].Key != "harness.command[4]" {
		t.Fatalf("got %v, want harness.command[2] and [4]", got)
	}
	want := `"agent.py" is a relative path, and the harness runs in its episode's workspace, where it names nothing; next to the configuration it names ` + filepath.Join(dir, "agent.py")
	if !strings.HasPrefix(got[0].Cause, want) || !strings.Contains(got[0].Cause, "workspace.template") {
		t.Errorf("cause %q, want it to start %q and name workspace.template", got[0].Cause, want)
	}
	cfg.Workspace.Template = tmpl
	if got := cfg.RelativeHarnessArgs(dir, "here"); len(got) != 1 || got[0].Key != "harness.command[2]" {
		t.Errorf("with a template holding prompts/a.txt: got %v, want harness.command[2] only", got)
	}
}
