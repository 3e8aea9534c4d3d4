package bridge

import (
	"encoding/json"
	"strings"
	"testing"
)

// Schemas are compared as JSON values: key order and spacing do not
// matter, descriptions are not compared, and each differing leaf is named.
func TestCompareTools(t *testing.T) {
	a := []Tool{
		{Name: "send", Description: "simulated", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"n":{"type":"integer"}}}`)},
		{Name: "list", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object","properties":{"ids":{"type":"array"}}}`)},
		{Name: "only-sim", InputSchema: json.RawMessage(`{}`)},
	}
	b := []Tool{
		{Name: "send", Description: "the real one", InputSchema: json.RawMessage(`{ "properties": {"n": {"type": "integer"}, "to": {"type": "array"}}, "type": "object" }`)},
		{Name: "list", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"properties":{"ids":{"type":"array"}},"type":"object"}`)},
	}
	var got []string
	for _, d := range CompareTools(a, b) {
		got = append(got, d.Describe("simulation", "production"))
	}
	want := []string{
		`tool "only-sim": served by simulation only, missing from production`,
		`tool "send": field inputSchema.properties.to.type differs: simulation has "string", production has "array"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := CompareTools(a[:2], a[:2]); len(d) != 0 {
		t.Fatalf("identical lists differ: %+v", d)
	}
}
