package tasks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/tasks"
)

// A JSONL task line that does not decode is described in the task's terms
// (the key, the kind of value given and wanted; an unknown key with the
// nearest known one), never by the Go type it is decoded into; the good
// line alone (the control) loads.
func TestJSONLDecodeErrorsNameTheKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.jsonl")
	lines := strings.Join([]string{
		`{"id": 5, "instruction": "x", "grader": "true"}`,
		`{"id": "b", "instruction": ["x"], "grader": "true"}`,
		`{"id": "c", "instruction": "x", "grader": "true", "memory_mb": 1.5}`,
		`{"id": "d", "instrution": "x", "grader": "true"}`,
		`{"id": "ok", "instruction": "x", "grader": "true"}`,
	}, "\n")
	if err := os.WriteFile(file, []byte(lines+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := tasks.Load(tasks.Source{JSONL: file})
	if err == nil {
		t.Fatal("bad task lines were accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`key "id": a number where a string is wanted`,
		`key "instruction": an array where a string is wanted`,
		`key "memory_mb": a number where an integer is wanted`,
		`unknown key "instrution" (did you mean "instruction"?)`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "jsonlTask") || strings.Contains(msg, "Go struct") {
		t.Errorf("the error names a Go type:\n%s", msg)
	}
	good := filepath.Join(t.TempDir(), "good.jsonl")
	if err := os.WriteFile(good, []byte(`{"id": "ok", "instruction": "x", "grader": "true"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := tasks.Load(tasks.Source{JSONL: good}); err != nil || s.Len() != 1 {
		t.Errorf("the good line alone: %v, %v", s, err)
	}
}
