package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type parquetRow struct {
	ID          string `parquet:"id"`
	Instruction string `parquet:"instruction"`
	Test        string `parquet:"test"`
	Level       string `parquet:"level"`
}

// A Parquet taskset's path is the configuration file's neighbour, and a
// changed column mapping is loaded again by Normalize.
func TestParquetTasksetIsResolvedAndReloaded(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ds", "train"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(filepath.Join(dir, "ds", "train", "0.parquet"), []parquetRow{{"a", "x", "true", "easy"}}); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig([]byte("harness:\n  command: [sh]\ntasks: {parquet: ds, columns: {metadata: [level]}}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	set := cfg.Taskset()
	if cfg.Tasks.Parquet != filepath.Join(dir, "ds") || set == nil || set.Len() != 1 || set.Tasks()[0].Metadata["level"] != "easy" {
		t.Fatalf("tasks %+v, set %v", cfg.Tasks, set)
	}
	if err := cfg.Normalize(); err != nil || cfg.Taskset() != set {
		t.Fatalf("normalize again: %v; the same source was loaded again", err)
	}
	cfg.Tasks.Columns.Metadata[0] = "author"
	if err := cfg.Normalize(); err == nil || !strings.Contains(err.Error(), `no column "author" (metadata)`) {
		t.Fatalf("a changed mapping: %v, want it loaded again and refused", err)
	}
	if _, err := ParseConfig([]byte("harness:\n  command: [sh]\ntasks: {parquet: ds, columns: {prompt: x}}\n"), dir); err == nil || !strings.Contains(err.Error(), "prompt") {
		t.Errorf("an unknown columns key: %v", err)
	}
}
