package tasks_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/tasks"
)

// BenchmarkTaskPrepare measures filling a fresh workspace from the hello
// task's Dockerfile (three files in two COPY instructions), the per-reset
// cost of a taskset.
func BenchmarkTaskPrepare(b *testing.B) {
	task := pick(b, loadTestSet(b), "hello")
	root := b.TempDir()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ws := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(ws, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := task.Prepare(ws); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTaskGrade measures grading the hello task once its workspace is
// solved: tests/ copied, a sandbox started with the workspace at /app
// (seccomp, limits, /logs/verifier watched, an execute-only shell for the
// leader), bash /tests/test.sh run to its end, the reward read and its
// writers checked. The floor beside it,
// BenchmarkTaskGradeFloor, is the same test.sh run bare by bash.
func BenchmarkTaskGrade(b *testing.B) {
	needSandbox(b)
	task := pick(b, loadTestSet(b), "hello")
	root := scratchDir(b)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)
	if err := task.Prepare(ws); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "greeting.txt"), []byte("hello world\n"), 0o644)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		scratch := filepath.Join(root, fmt.Sprint("grade-", i))
		res, err := task.Grade(ctx, tasks.RunOptions{Workspace: ws, Scratch: scratch})
		if err != nil || res.Reward == nil || *res.Reward != 1 {
			b.Fatalf("grade: %+v %v", res, err)
		}
		os.RemoveAll(scratch)
	}
}

// BenchmarkTaskGradeFloor runs the hello task's test.sh bare (bash, no
// sandbox, no copies) against a solved copy at a host path: what grading
// costs without the sandbox. The script reads /app, so the floor runs a
// copy with the paths rewritten.
func BenchmarkTaskGradeFloor(b *testing.B) {
	task := pick(b, loadTestSet(b), "hello")
	root := scratchDir(b)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)
	task.Prepare(ws)
	os.WriteFile(filepath.Join(ws, "greeting.txt"), []byte("hello world\n"), 0o644)
	src, err := os.ReadFile("testdata/harbor/hello/tests/test.sh")
	if err != nil {
		b.Fatal(err)
	}
	logs := filepath.Join(root, "logs")
	script := filepath.Join(root, "test.sh")
	body := strings.NewReplacer("/app", ws, "/logs", logs).Replace(string(src))
	os.WriteFile(script, []byte(body), 0o755)
	for b.Loop() {
		cmd := exec.Command("bash", script)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GREETING_FILE=greeting.txt"}
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
			b.Fatalf("floor: %s %v", out, err)
		}
	}
}
