package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// referenceRow is a row of the reference block's Parquet dataset, in its
// tasks.columns names.
type referenceRow struct {
	TaskID     string `parquet:"task_id"`
	Prompt     string `parquet:"prompt"`
	Test       string `parquet:"test"`
	Difficulty string `parquet:"difficulty"`
	Source     string `parquet:"source"`
}

// referenceBlock is the first YAML block of docs/configuration.md: the
// reference that lists every key with its default.
func referenceBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```yaml\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("docs/configuration.md has no ```yaml block")
	}
	return block
}

// The reference block of docs/configuration.md, its files put where it
// names them, is a configuration ParseConfig accepts: every key it lists is
// one the decoder knows, and no value it documents contradicts another (it
// once set the gateway's upstream and timeout beside url "", which the
// model check refuses). The control: the same block with url "" again is
// refused, so the test sees the check.
func TestReferenceBlockIsAValidConfiguration(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"seed", "records", "tasks/hello/tests", "dataset"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"tasks/hello/task.toml":      "version = \"1.0\"\n",
		"tasks/hello/instruction.md": "Say hello.\n",
		"tasks/hello/tests/test.sh":  "#!/bin/sh\nexit 0\n",
		"tasks.jsonl":                `{"id": "one", "instruction": "say one", "grader": "true"}` + "\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rows := []referenceRow{{"p1", "say p1", "true", "easy", "docs"}}
	if err := parquet.WriteFile(filepath.Join(dir, "dataset", "0.parquet"), rows); err != nil {
		t.Fatal(err)
	}
	block := referenceBlock(t)
	if _, err := ParseConfig([]byte(block), dir); err != nil {
		t.Fatalf("docs/configuration.md's reference block:\n%v", err)
	}
	noGateway := strings.Replace(block, "    url: http://", "    url: \"\" # http://", 1)
	if noGateway == block {
		t.Fatal("the reference block's harness.model.url is not an http URL; the control cannot unset it")
	}
	if _, err := ParseConfig([]byte(noGateway), dir); err == nil || !strings.Contains(err.Error(), "needs harness.model.url") {
		t.Fatalf("the block with url \"\": %v, want the gateway's keys refused", err)
	}
}
