package session

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWorkspaceChangesBounded: the listing keeps at most maxChangedPaths
// paths and counts the rest, and does not follow a symbolic link out of
// the workspace.
func TestWorkspaceChangesBounded(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	since := time.Now()
	for i := range maxChangedPaths + 50 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	c := workspaceChanges(dir, since)
	if len(c.Changed) != maxChangedPaths || c.More != 51 || c.Walked != maxChangedPaths+52 || c.Partial {
		t.Errorf("listed %d, more %d, walked %d, partial %v", len(c.Changed), c.More, c.Walked, c.Partial)
	}
	for _, p := range c.Changed {
		if filepath.Base(p) == "secret" {
			t.Errorf("followed the link: %q", p)
		}
	}
	if c := workspaceChanges(dir, time.Now().Add(time.Hour)); len(c.Changed) != 0 || c.More != 0 {
		t.Errorf("nothing changed since: %+v", c)
	}
}

// BenchmarkWorkspaceChanges is what the workspace record adds to the end
// of a turn: a walk of a workspace of 1,000 or 10,000 files in 100
// directories, nothing changed.
func BenchmarkWorkspaceChanges(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			for i := range n {
				sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%100))
				if err := os.MkdirAll(sub, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d", i)), []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			since := time.Now().Add(time.Hour)
			b.ResetTimer()
			for range b.N {
				if c := workspaceChanges(dir, since); c.Walked != n+101 {
					b.Fatalf("walked %d", c.Walked)
				}
			}
		})
	}
}
