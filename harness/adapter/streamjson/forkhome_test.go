package streamjson

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// TestMCPConfigWriteFollowsNoAgentLink: a fork sibling's HOME is a
// copy of its parent's, links included (docs/fork.md), and the parent's
// harness writes its HOME. The claude adapter's Start writes the MCP
// configuration to HOME/.harnessd/claude-mcp.json as the daemon, on the
// host. With os.OpenFile (O_TRUNC, following links) a link the parent
// planted there made a Claude Code sibling's start truncate and rewrite
// any file the daemon may write (another session's files, record_dir,
// /etc as root); through beneath.Dir it must not. The control: without
// the link the file is written in the HOME.
func TestMCPConfigWriteFollowsNoAgentLink(t *testing.T) {
	mcp := &harness.MCPInjection{ServerName: "env", URL: "http://127.0.0.1:9/mcp", Token: "tok"}
	start := func(home string) error {
		l := &harness.Launch{Command: []string{"/nonexistent/claude"}, Home: home, Workspace: t.TempDir(), MCP: mcp}
		return New().Start(context.Background(), l)
	}
	// The control: the same write (Start's buildInvocation) lands in the
	// HOME. (Start removes the file again after its failed spawn.)
	home := t.TempDir()
	if _, err := buildInvocation(&harness.Launch{Command: []string{"claude"}, Home: home, MCP: mcp}, Options{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(home, mcpConfigFile)); err != nil || len(b) == 0 {
		t.Fatalf("control: the MCP config in the HOME: %q %v", b, err)
	}

	home = t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".harnessd"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(home, mcpConfigFile)); err != nil {
		t.Fatal(err)
	}
	err := start(home)
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("a file outside the HOME, linked from HOME/%s, was rewritten by the adapter's start (start: %v): now %q", mcpConfigFile, err, b)
	}
}
