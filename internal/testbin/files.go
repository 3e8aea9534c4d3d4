package testbin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFiles writes files (a path beneath dir -> its content) beneath dir,
// making the directories they need; a .sh file is executable. A test's
// way to lay out a task directory or a tree of fixtures.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		f := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(f, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
	}
}
