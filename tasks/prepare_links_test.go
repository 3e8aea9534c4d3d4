package tasks_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPrepareStepDoesNotWriteThroughAgentLinks (red team 6): before turn N
// of a multi-step task the daemon uploads steps/N/workdir/ into the live
// workspace on the host (Task.PrepareStep -> copyDir -> copyOne). copyOne
// guards only the last component (an existing link there is removed), not
// the directories above it: MkdirAll and OpenFile(O_TRUNC) follow a link
// the agent left in step N-1 where a directory of workdir/ goes. So an
// agent that makes conf -> /some/host/dir has the daemon overwrite
// /some/host/dir/settings.json with the task's file (and, as root, chown
// it to the harness: chownNew's Lchown follows the parent link too): a
// write outside the workspace, as the daemon. The control: without the
// link the file lands in the workspace.
func TestPrepareStepDoesNotWriteThroughAgentLinks(t *testing.T) {
	task := mustTask(t, map[string]string{
		"task.toml":                            "[[steps]]\nname = \"one\"\n[[steps]]\nname = \"two\"\n",
		"steps/one/instruction.md":             "one\n",
		"steps/two/instruction.md":             "two\n",
		"steps/two/workdir/conf/settings.json": "TASK CONTENT\n",
		"tests/test.sh":                        "echo 1 > /logs/verifier/reward.txt\n",
	})
	root := t.TempDir()

	// Control: a plain workspace gets the file.
	ws := filepath.Join(root, "ws-control")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := task.PrepareStep(ws, 2); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "conf", "settings.json")); err != nil || string(b) != "TASK CONTENT\n" {
		t.Fatalf("control: %q %v", b, err)
	}

	// The agent's workspace after step one: conf is a link out of it.
	host := filepath.Join(root, "host-dir") // stands for /etc, another session's workspace, ...
	if err := os.Mkdir(host, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(host, "settings.json")
	if err := os.WriteFile(victim, []byte("HOST ORIGINAL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(ws, "conf")); err != nil {
		t.Fatal(err)
	}
	err := task.PrepareStep(ws, 2)
	if b, _ := os.ReadFile(victim); string(b) != "HOST ORIGINAL\n" {
		t.Fatalf("PrepareStep (err %v) wrote through the agent's link conf -> %s: %s now holds %q", err, host, victim, b)
	}
}
