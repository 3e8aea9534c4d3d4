package tasks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/tasks"
)

// linkedTask makes a Harbor task directory from files, then the links
// (path in the task -> target), and loads it.
func linkedTask(t *testing.T, files, links map[string]string) (*tasks.Task, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	for p, c := range files {
		f := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	set, err := tasks.Load(tasks.Source{Task: dir})
	if err != nil {
		return nil, err
	}
	return set.Tasks()[0], nil
}

// TestTaskLinksDoNotReadHostFiles (red team 11): a task directory from a
// dataset is not the daemon's, but the daemon read its files with its own
// power and followed its links: instruction.md -> a host file became the
// agent's first message (and the record's, and the model's), and a COPY
// through a link in environment/ (ctx -> a host directory) copied host
// files, as the daemon, into the agent's workspace. Now task files are read
// beneath the task directory and COPY sources must resolve within the build
// context, as in a Docker build: both tasks are refused at load. The
// controls: the same files inside the task (and a link that stays inside)
// load and copy.
func TestTaskLinksDoNotReadHostFiles(t *testing.T) {
	host := t.TempDir() // stands for /etc, /var/run/secrets, record_dir, ...
	secret := filepath.Join(host, "secret.txt")
	if err := os.WriteFile(secret, []byte("HOST SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"task.toml": "", "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}

	t.Run("instruction", func(t *testing.T) {
		// Control: an instruction inside the task, reached through a link
		// that stays inside.
		task, err := linkedTask(t, with(map[string]string{"docs/instr.md": "fix the bug\n"}), map[string]string{"instruction.md": "docs/instr.md"})
		if err != nil || task.Instruction != "fix the bug" {
			t.Fatalf("control: %v", err)
		}
		task, err = linkedTask(t, with(nil), map[string]string{"instruction.md": secret})
		if err == nil {
			t.Fatalf("instruction.md -> %s loaded: the agent's instruction is %q", secret, task.Instruction)
		}
	})

	t.Run("copy", func(t *testing.T) {
		df := "FROM ubuntu\nWORKDIR /app\nCOPY ctx/secret.txt /app/\n"
		prepare := func(task *tasks.Task) string {
			ws := t.TempDir()
			if err := task.Prepare(ws); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(filepath.Join(ws, "secret.txt"))
			return string(b)
		}
		// Control: the same COPY of a file of the build context.
		task, err := linkedTask(t, with(map[string]string{"instruction.md": "go\n", "environment/Dockerfile": df, "environment/ctx/secret.txt": "TASK FILE\n"}), nil)
		if err != nil {
			t.Fatalf("control: %v", err)
		}
		if got := prepare(task); got != "TASK FILE\n" {
			t.Fatalf("control: the workspace holds %q", got)
		}
		task, err = linkedTask(t, with(map[string]string{"instruction.md": "go\n", "environment/Dockerfile": df}), map[string]string{"environment/ctx": host})
		if err == nil {
			t.Fatalf("COPY through environment/ctx -> %s loaded; the workspace then holds %q", host, prepare(task))
		}
		if !strings.Contains(err.Error(), "outside the build context") {
			t.Fatalf("refused for another reason: %v", err)
		}
	})
}

// TestTaskFilesAreReadBounded (red team 11): task.toml was read whole,
// of any size (toml.DecodeFile), as was a Dockerfile before its 1 MiB
// bound was checked: a task's 64 MiB task.toml of comments loaded at a
// cost of hundreds of MiB to the daemon (a terabyte, all of its memory).
// Now reads stop past a 1 MiB bound. The control: a small task.toml loads.
func TestTaskFilesAreReadBounded(t *testing.T) {
	files := map[string]string{"instruction.md": "go\n", "tests/test.sh": "exit 0\n", "task.toml": "[task]\nname = \"ok\"\n"}
	if _, err := linkedTask(t, files, nil); err != nil {
		t.Fatalf("control: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "task")
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// 64 MiB of comment lines (not a sparse file: NULs would stop a decoder
	// at once).
	f, err := os.OpenFile(filepath.Join(dir, "task.toml"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := "#" + strings.Repeat("x", 1023) + "\n"
	chunk := strings.Repeat(line, 1024)
	for range 64 {
		if _, err := f.WriteString(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	var lerr error
	got := testbin.Allocated(func() { _, lerr = tasks.Load(tasks.Source{Task: dir}) })
	t.Logf("loading a 64 MiB task.toml allocated %d bytes (%v)", got, lerr)
	if lerr == nil || got > 8<<20 {
		t.Fatalf("loading a 64 MiB task.toml allocated %d bytes and ended with %v, want an error under 8 MiB (a bounded read)", got, lerr)
	}
}
