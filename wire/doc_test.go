package wire

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestProtocolDocMatchesTypes reads docs/protocol.md's table of each event
// type and compares field names, order and required-ness with the payload
// types, so the page harness authors read cannot drift from the schema.
func TestProtocolDocMatchesTypes(t *testing.T) {
	b, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	tables := docTables(string(b))
	for _, typ := range EventTypes {
		rows, ok := tables[string(typ)]
		if !ok {
			t.Errorf("docs/protocol.md has no section ### %s", typ)
			continue
		}
		fields := Fields(reflect.TypeOf(NewPayload(typ)))
		var got, want []string
		for _, f := range fields {
			want = append(want, f.Name+required(f.Required))
		}
		for _, r := range rows {
			got = append(got, r.name+required(r.required))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("### %s: the doc lists\n  %s\nthe type has\n  %s", typ, strings.Join(got, " "), strings.Join(want, " "))
		}
	}
	for name := range tables {
		if !EventType(name).Valid() {
			t.Errorf("docs/protocol.md documents %q, which is not an event type", name)
		}
	}
}

func required(r bool) string {
	if r {
		return "(required)"
	}
	return ""
}

type docRow struct {
	name     string
	required bool
}

// docTables returns, per "### name" section, the rows of its field table
// (| `field` | type | yes/no | meaning |).
func docTables(doc string) map[string][]docRow {
	out := map[string][]docRow{}
	section := ""
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			section = strings.TrimSpace(h)
			out[section] = nil
			continue
		}
		if strings.HasPrefix(line, "## ") {
			section = "" // a section of another kind ends the event's
			continue
		}
		if section == "" || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		out[section] = append(out[section], docRow{name: name, required: strings.TrimSpace(cells[3]) == "yes"})
	}
	return out
}
