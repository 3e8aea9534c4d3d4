package wire

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestProtocolDocListsTaskFields keeps docs/protocol.md's table of the
// task fields of observations in step with Metadata and TaskGrade.
func TestProtocolDocListsTaskFields(t *testing.T) {
	b, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Tasks in observations\n")
	if !ok {
		t.Fatal("docs/protocol.md has no section ## Tasks in observations")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	rows := map[string]string{}
	var names []string
	for _, line := range strings.Split(sec, "\n") {
		if cells := strings.Split(line, "|"); strings.HasPrefix(line, "| `") && len(cells) >= 4 {
			name := strings.Trim(strings.TrimSpace(cells[1]), "`")
			names = append(names, name)
			rows[name] = cells[3]
		}
	}
	var want []string
	mt := reflect.TypeOf(Metadata{})
	for i := range mt.NumField() {
		if f := mt.Field(i); strings.HasPrefix(f.Name, "Task") || f.Name == "Grade" {
			want = append(want, jsonName(f))
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("the doc lists %v; Metadata's task fields are %v", names, want)
	}
	gt := reflect.TypeOf(TaskGrade{})
	for i := range gt.NumField() {
		if n := jsonName(gt.Field(i)); !strings.Contains(rows["grade"], "`"+n+"`") {
			t.Errorf("the doc's grade row does not describe %q", n)
		}
	}
}

func jsonName(f reflect.StructField) string {
	n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return n
}
