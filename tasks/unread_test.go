package tasks

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Every source of a taskset that cannot be read is said at once: validate
// reported the missing directory, and only once that was fixed the
// missing Parquet file. The sources' errors still unwrap (fs.ErrNotExist).
func TestLoadSaysEveryUnreadableSource(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(Source{Dir: filepath.Join(dir, "nodir"), JSONL: filepath.Join(dir, "no.jsonl"), Parquet: filepath.Join(dir, "no.parquet")})
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{"dir: ", "jsonl: ", "parquet: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%q: want one line that unwraps to fs.ErrNotExist", err)
	}
}
