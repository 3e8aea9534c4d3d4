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

// A JSONL task whose metadata nests deeper than a trainer's JSON decoder
// takes (it goes to the trainer in every observation of the task; Python's
// decoder raises RecursionError near 1,000 levels, Go's takes 10,000) is
// refused at load, naming the line. The control: the same task with its
// metadata 20 levels deep loads.
func TestJSONLTaskMetadataATrainerCannotDecodeIsRefused(t *testing.T) {
	nested := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	line := func(depth int) string {
		return `{"id": "deep", "instruction": "x", "grader": "true", "metadata": ` + nested(depth) + "}\n"
	}
	file := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(file, []byte(line(2000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tasks.Load(tasks.Source{JSONL: file}); err == nil || !strings.Contains(err.Error(), "t.jsonl:1") ||
		!strings.Contains(err.Error(), "nested deeper than 128 levels") {
		t.Errorf("metadata 2,000 levels deep: %v", err)
	}
	if err := os.WriteFile(file, []byte(line(20)), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := tasks.Load(tasks.Source{JSONL: file}); err != nil || s.Len() != 1 {
		t.Errorf("control, 20 levels: %v, %v", s, err)
	}
}

// The same for a Harbor task's [metadata] (task.toml): refused at load when
// nested deeper than a trainer's decoder takes. The control: 20 levels load.
func TestHarborTaskMetadataATrainerCannotDecodeIsRefused(t *testing.T) {
	task := func(depth int) string {
		dir := filepath.Join(t.TempDir(), "deep")
		if err := os.CopyFS(dir, os.DirFS("testdata/harbor/hello")); err != nil {
			t.Fatal(err)
		}
		toml, err := os.ReadFile(filepath.Join(dir, "task.toml"))
		if err != nil {
			t.Fatal(err)
		}
		value := strings.Repeat("{ a = ", depth) + "1" + strings.Repeat(" }", depth)
		withDeep := strings.Replace(string(toml), "[metadata]\n", "[metadata]\ndeep = "+value+"\n", 1)
		if err := os.WriteFile(filepath.Join(dir, "task.toml"), []byte(withDeep), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	if _, err := tasks.Load(tasks.Source{Task: task(300)}); err == nil || !strings.Contains(err.Error(), "[metadata]: arrays and objects nested deeper than 128 levels") {
		t.Errorf("[metadata] 300 levels deep: %v", err)
	}
	if s, err := tasks.Load(tasks.Source{Task: task(20)}); err != nil || s.Len() != 1 {
		t.Errorf("control, 20 levels: %v, %v", s, err)
	}
}
