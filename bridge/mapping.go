package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
)

// ToolDifference is one way two servers mapped onto the same tools (an
// environment's simulation and production servers) differ, as the harness
// would see it: a tool only one of them has, or a field of a tool's
// schemas whose value differs.
type ToolDifference struct {
	// Tool is the tool's name.
	Tool string
	// Field is the differing field as a path (inputSchema.properties.to.type),
	// empty when the tool itself is missing on one side.
	Field string
	// A and B are the field's values on each side ("" when absent there);
	// for a missing tool, the side that lacks it says "missing".
	A, B string
}

// Describe is the difference in words, naming the two sides a and b.
func (d ToolDifference) Describe(a, b string) string {
	if d.Field == "" {
		if d.A == "missing" {
			return fmt.Sprintf("tool %q: served by %s only, missing from %s", d.Tool, b, a)
		}
		return fmt.Sprintf("tool %q: served by %s only, missing from %s", d.Tool, a, b)
	}
	return fmt.Sprintf("tool %q: field %s differs: %s has %s, %s has %s", d.Tool, d.Field, a, orAbsent(d.A), b, orAbsent(d.B))
}

func orAbsent(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// CompareTools compares what two servers serve: the same tool names, each
// with the same input and output schemas (compared as JSON values, so
// spacing and key order do not matter). Titles and descriptions are not
// part of the contract and are not compared. The differences come sorted
// by tool, then field.
func CompareTools(a, b []Tool) []ToolDifference {
	am, bm := toolMap(a), toolMap(b)
	var out []ToolDifference
	for name, ta := range am {
		tb, ok := bm[name]
		if !ok {
			out = append(out, ToolDifference{Tool: name, B: "missing"})
			continue
		}
		out = append(out, diffSchema(name, "inputSchema", ta.InputSchema, tb.InputSchema)...)
		out = append(out, diffSchema(name, "outputSchema", ta.OutputSchema, tb.OutputSchema)...)
	}
	for name := range bm {
		if _, ok := am[name]; !ok {
			out = append(out, ToolDifference{Tool: name, A: "missing"})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tool != out[j].Tool {
			return out[i].Tool < out[j].Tool
		}
		return out[i].Field < out[j].Field
	})
	return out
}

func toolMap(ts []Tool) map[string]Tool {
	m := make(map[string]Tool, len(ts))
	for _, t := range ts {
		m[t.Name] = t
	}
	return m
}

// diffSchema compares two schemas and returns every leaf that differs.
func diffSchema(tool, field string, a, b json.RawMessage) []ToolDifference {
	va, erra := decodeSchema(a)
	vb, errb := decodeSchema(b)
	if erra != nil || errb != nil {
		if bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b)) {
			return nil
		}
		return []ToolDifference{{Tool: tool, Field: field, A: string(a), B: string(b)}}
	}
	var out []ToolDifference
	diffValue(field, va, vb, func(path string, x, y any) {
		out = append(out, ToolDifference{Tool: tool, Field: path, A: render(x), B: render(y)})
	})
	return out
}

func decodeSchema(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	var v any
	err := json.Unmarshal(raw, &v)
	return v, err
}

// diffValue walks two decoded JSON values side by side and reports each
// path where they differ: into objects key by key, into arrays of equal
// length element by element, else the whole value.
func diffValue(path string, a, b any, report func(path string, a, b any)) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			report(path, a, b)
			return
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			diffValue(path+"."+k, x[k], y[k], report)
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			report(path, a, b)
			return
		}
		for i := range x {
			diffValue(path+"["+strconv.Itoa(i)+"]", x[i], y[i], report)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			report(path, a, b)
		}
	}
}

// render is a JSON value for a difference's message ("" when absent).
func render(v any) string {
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
