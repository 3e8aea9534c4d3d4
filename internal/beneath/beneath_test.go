package beneath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileStaysBeneathAndFollowsNoLink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	// Positive control: a plain path is written, its directories made.
	made, err := WriteFile(dir, "a/b/c.txt", "hi")
	if err != nil || strings.Join(made, " ") != "a a/b a/b/c.txt" {
		t.Fatalf("made %v, %v", made, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a/b/c.txt")); string(b) != "hi" {
		t.Fatalf("content %q", b)
	}
	if _, err := WriteFile(dir, "a/b/c.txt", "x"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a/b/c.txt")); string(b) != "x" {
		t.Fatalf("not truncated: %q", b)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "f"), filepath.Join(dir, "flink")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"link/x", "flink", "../x", "/etc/x", "a/../../x", "."} {
		if _, err := WriteFile(dir, rel, "escaped"); err == nil {
			t.Errorf("%s: written", rel)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("wrote outside: %v", ents)
	}
}
