package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// TestSandboxReadOnly: ~ is expanded to the daemon's HOME; relative paths,
// /, HOME itself and its ancestors, record_dir and the workspace root
// (inside or holding) are refused, every one in the same pass; process
// isolation refuses the key.
func TestSandboxReadOnly(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	t.Setenv("HOME", home)
	base := func() *Config {
		return &Config{Harness: HarnessConfig{Config: harness.Config{Command: []string{"/bin/true"}}}, Workspace: WorkspaceConfig{Root: "/srv/ws"}, RecordDir: "/srv/records"}
	}
	c := base()
	c.Sandbox.ReadOnly = []string{"~/.cache/models", "/opt/data/"}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	if got := c.Sandbox.ReadOnly; got[0] != filepath.Join(home, ".cache/models") || got[1] != "/opt/data" {
		t.Fatalf("normalised %v", got)
	}
	c = base()
	c.Sandbox.ReadOnly = []string{"rel/dir", "/", "~", filepath.Dir(home), "/srv/records/x", "/srv", "/srv/ws"}
	err := c.Normalize()
	if err == nil {
		t.Fatal("accepted")
	}
	for i := range c.Sandbox.ReadOnly {
		if !strings.Contains(err.Error(), "sandbox.read_only["+string(rune('0'+i))+"]") {
			t.Errorf("entry %d not reported: %v", i, err)
		}
	}
	y, err := ParseConfig([]byte("harness: {command: [/bin/true]}\nsandbox:\n  read_only: [~/data]\n"), t.TempDir())
	if err != nil || len(y.Sandbox.ReadOnly) != 1 || y.Sandbox.ReadOnly[0] != filepath.Join(home, "data") {
		t.Fatalf("sandbox.read_only from YAML: %+v, %v", y, err)
	}
	c = base()
	c.Isolation = IsolationProcess
	c.Sandbox.ReadOnly = []string{"/opt/data"}
	if err := c.Normalize(); err == nil || !strings.Contains(err.Error(), "isolation: sandbox") {
		t.Errorf("process isolation: %v", err)
	}
}
