package rubric

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/process"
)

// benchSpec is a small command rubric over the workspace: a shell test of
// one file, scoring 1.
var benchSpec = []Spec{{Name: "answer", Type: KindCommand, Command: []string{"sh", "-c", `[ "$(cat answer.txt)" = 42 ] && echo 1 || echo 0`}}}

func benchWorkspace(b *testing.B) string {
	d, err := os.MkdirTemp("/var/tmp", "harnessd-rubric-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	os.Chmod(d, 0o755) // the sandbox's ids are not ours
	os.WriteFile(filepath.Join(d, "answer.txt"), []byte("42"), 0o644)
	return d
}

// BenchmarkCommandRubric measures one command rubric as it runs now: a
// sandbox started (seccomp, a cgroup with limits, the workspace bound
// read-only), the scorer run in it, the sandbox closed.
func BenchmarkCommandRubric(b *testing.B) {
	ws := benchWorkspace(b)
	s, err := process.NewSupervisor(process.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background(), 0)
	set, err := New(benchSpec, Deps{Supervisor: s, Env: process.DefaultEnviron(nil)})
	if err != nil {
		b.Fatal(err)
	}
	sandboxFn := inSandbox(b, ws)
	for b.Loop() {
		total, res := set.Score(context.Background(), Input{Workspace: ws, Sandbox: sandboxFn})
		if total != 1 {
			b.Fatalf("score %v: %+v", total, res)
		}
	}
}

// BenchmarkCommandRubricHost is the same scorer as it ran before: a plain
// child of the daemon's supervisor in the workspace, on the host.
func BenchmarkCommandRubricHost(b *testing.B) {
	ws := benchWorkspace(b)
	s, err := process.NewSupervisor(process.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background(), 0)
	ctx := context.Background()
	for b.Loop() {
		p, err := s.Start(process.Spec{Name: "rubric", Path: "sh", Args: benchSpec[0].Command[1:], Dir: ws, Env: process.DefaultEnviron(nil), Stdio: process.StdioRaw})
		if err != nil {
			b.Fatal(err)
		}
		p.CloseStdin()
		if st, err := p.Wait(ctx); err != nil || st.Code != 0 {
			b.Fatalf("scorer: %v %v", st, err)
		}
	}
}
