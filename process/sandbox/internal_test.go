package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRangesAreDistinctAndReused(t *testing.T) {
	rs, err := NewRanges(1<<30, 2)
	if err != nil {
		t.Fatal(err)
	}
	a, relA, err := rs.acquire()
	if err != nil {
		t.Fatal(err)
	}
	b, relB, err := rs.acquire()
	if err != nil || a == b || a+RangeSize != b && b+RangeSize != a {
		t.Fatalf("ranges %d and %d (%v)", a, b, err)
	}
	if _, _, err := rs.acquire(); err == nil {
		t.Fatal("a third range out of two")
	}
	relA()
	relA() // idempotent: must not free another sandbox's range
	c, _, err := rs.acquire()
	if err != nil || c != a {
		t.Fatalf("after release got %d (%v), want %d", c, err, a)
	}
	relB()
	if _, err := NewRanges(1<<32-RangeSize, 2); err == nil {
		t.Fatal("ranges beyond 32 bits accepted")
	}
}

func TestResolveInStaysInsideTheRoot(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/lib"), 0o755))
	must(os.Symlink("/usr/lib", filepath.Join(root, "lib")))       // absolute: restarts at root
	must(os.Symlink("../../../..", filepath.Join(root, "usr/up"))) // cannot climb out
	must(os.Symlink("loop", filepath.Join(root, "loop")))          // a loop
	for in, want := range map[string]string{
		"/lib/x":      root + "/usr/lib/x",
		"/usr/up/etc": root + "/etc",
		"/a/../b":     root + "/b",
		"/missing/y":  root + "/missing/y",
	} {
		got, err := resolveIn(root, in)
		if err != nil || got != want {
			t.Errorf("resolveIn(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := resolveIn(root, "/loop/x"); err == nil {
		t.Error("a symlink loop resolved")
	}
}

// A clone that failed names the likely cause by its errno: a namespace
// the host refuses (EPERM), an id map that could not be written (EACCES);
// another errno gets no guess.
func TestCloneFailureHintFollowsTheErrno(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{syscall.EPERM, "no permission to create user namespaces"},
		{syscall.EACCES, "id map could not be written"},
		{syscall.ENOMEM, ""},
	} {
		got := (&SetupError{Stage: StageClone, Err: fmt.Errorf("fork/exec init: %w", c.err)}).Error()
		if (c.want == "" && strings.Contains(got, "(")) || !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want the hint %q", c.err, got, c.want)
		}
	}
}
