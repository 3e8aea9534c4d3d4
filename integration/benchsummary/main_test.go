package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/benchrow"
)

// TestTable: rows written by benchrow among other benchmark output come
// out as one Markdown table in their order; short rows are padded, pipes
// escaped, met and missed set in bold.
func TestTable(t *testing.T) {
	var in bytes.Buffer
	in.WriteString("goos: linux\nBENCH turn ...\n")
	benchrow.WriteRow(&in, "turn", "500 µs", "330 µs", "1.5", "≤ 1.3×", benchrow.Missed)
	in.WriteString("BenchmarkX-2  1  5 ns/op\n")
	benchrow.WriteRow(&in, "a|b", "1")
	name := filepath.Join(t.TempDir(), "bench.txt")
	if err := os.WriteFile(name, in.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	rows, err := readRows(name)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	write(&out, rows)
	want := strings.Join([]string{
		"| what | harnessd | floor (same run) | ratio | target | verdict |",
		"| --- | --- | --- | --- | --- | --- |",
		"| turn | 500 µs | 330 µs | 1.5 | ≤ 1.3× | **missed** |",
		`| a\|b | 1 | — | — | — | — |`,
	}, "\n") + "\n"
	if out.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", out.String(), want)
	}
	if _, err := readRows(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("a missing file gave no error")
	}
}
