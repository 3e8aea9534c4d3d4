package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// goTools builds a Go source whose tools echo their name.
func goTools(source string, names ...string) Source {
	var tools []GoTool
	for _, n := range names {
		tools = append(tools, GoTool{
			Tool: Tool{Name: n, Description: "tool " + n, InputSchema: json.RawMessage(`{"type":"object","title":"` + n + `"}`)},
			Handler: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(source + "/" + n), nil
			},
		})
	}
	return NewGoSource(source, tools...)
}

func servedNames(c *Catalog) []string {
	var out []string
	for _, e := range c.Served() {
		out = append(out, e.Served)
	}
	return out
}

func TestCatalogConflictRules(t *testing.T) {
	cases := []struct {
		name     string
		sources  []Source
		opts     CatalogOptions
		served   []string // on success
		kind     error    // on failure
		contains []string
	}{
		{name: "no conflicts",
			sources: []Source{goTools("env", "query_db", "lint")}, opts: CatalogOptions{Builtins: []string{"read_file"}},
			served: []string{"lint", "query_db"}},
		{name: "built-in renamed",
			sources: []Source{goTools("env", "read_file", "add")}, opts: CatalogOptions{Builtins: []string{"read_file"}},
			served: []string{"add", "env_read_file"}},
		{name: "custom prefix",
			sources: []Source{goTools("env", "bash")}, opts: CatalogOptions{Builtins: []string{"bash"}, Prefix: "x_"},
			served: []string{"x_bash"}},
		{name: "reserved",
			sources: []Source{goTools("env", "step", "add"), goTools("other", "reset")},
			kind:    ErrReservedName, contains: []string{"Tool names are reserved for orchestration controls: reset, step", `"env"`, `"other"`}},
		{name: "duplicate across sources",
			sources: []Source{goTools("a", "lint"), goTools("b", "lint")},
			kind:    ErrDuplicateTool, contains: []string{"Duplicate environment tool name: lint", `sources "a" and "b"`}},
		{name: "duplicate in one source",
			sources: []Source{goTools("a", "lint", "lint")},
			kind:    ErrDuplicateTool, contains: []string{"Duplicate environment tool name: lint", `twice in source "a"`}},
		{name: "renamed name is an env tool",
			sources: []Source{goTools("a", "read_file"), goTools("b", "env_read_file")}, opts: CatalogOptions{Builtins: []string{"read_file"}},
			kind: ErrNameConflict, contains: []string{"Cannot resolve tool name conflict: 'read_file' collides with a harness built-in tool and 'env_read_file' is also taken", `source "b"`, `source "a"`}},
		{name: "renamed name is a built-in",
			sources: []Source{goTools("a", "read_file")}, opts: CatalogOptions{Builtins: []string{"read_file", "env_read_file"}},
			kind: ErrNameConflict, contains: []string{"'env_read_file' is also taken", "harness built-in"}},
		{name: "hidden tools obey the rules too",
			sources: []Source{goTools("a", "grade"), goTools("grader", "grade")}, opts: CatalogOptions{Hide: []string{"grader/*"}},
			kind: ErrDuplicateTool, contains: []string{"grade"}},
		{name: "expose and hide",
			sources: []Source{goTools("env", "add", "echo", "secret_a", "secret_b"), goTools("grader", "grade")},
			opts:    CatalogOptions{Expose: []string{"add", "echo", "secret_*", "grade"}, Hide: []string{"secret_b", "grader/*"}},
			served:  []string{"add", "echo", "secret_a"}},
		{name: "expose by served name",
			sources: []Source{goTools("env", "read_file", "add")},
			opts:    CatalogOptions{Builtins: []string{"read_file"}, Expose: []string{"env_*"}},
			served:  []string{"env_read_file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cat, err := NewCatalog(testCtx(t), tc.sources, tc.opts)
			if tc.kind != nil {
				if err == nil {
					t.Fatalf("NewCatalog succeeded: %v", servedNames(cat))
				}
				var ne *NameError
				if !errors.Is(err, tc.kind) || !errors.As(err, &ne) {
					t.Fatalf("error %v is not a *NameError of %v", err, tc.kind)
				}
				for _, w := range tc.contains {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("NewCatalog: %v", err)
			}
			if got := servedNames(cat); !slices.Equal(got, tc.served) {
				t.Fatalf("served = %v, want %v", got, tc.served)
			}
		})
	}
}

func TestCatalogEntriesAndCall(t *testing.T) {
	env := goTools("env", "read_file", "add")
	cat := newCatalog(t, CatalogOptions{Builtins: []string{"read_file"}, Hide: []string{"add"}}, env)
	entries := cat.Entries()
	if len(entries) != 2 || entries[0].Served != "add" || !entries[0].Hidden || entries[1].Served != "env_read_file" ||
		entries[1].Upstream != "read_file" || entries[1].Source != "env" || entries[1].Hidden {
		t.Fatalf("entries = %+v", entries)
	}
	// Description and schema are unchanged by the rename; the source's tool
	// keeps its name.
	if e := entries[1]; e.Tool.Name != "read_file" || e.Tool.Description != "tool read_file" ||
		string(e.Tool.InputSchema) != `{"type":"object","title":"read_file"}` {
		t.Fatalf("renamed entry's tool = %+v", e.Tool)
	}
	for _, name := range []string{"env_read_file", "read_file", "add"} {
		res, err := cat.Call(testCtx(t), name, nil)
		if err != nil {
			t.Fatalf("Call(%s): %v", name, err)
		}
		if want := "env/" + strings.TrimPrefix(name, "env_"); resultText(res) != want {
			t.Fatalf("Call(%s) = %q, want %q", name, resultText(res), want)
		}
	}
	if _, err := cat.Call(testCtx(t), "nope", nil); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
	for _, bad := range []string{`[1,2]`, `"x"`, `{"a":`, `null`} {
		if _, err := cat.Call(testCtx(t), "add", json.RawMessage(bad)); !errors.Is(err, ErrBadArguments) {
			t.Fatalf("arguments %s: %v, want ErrBadArguments", bad, err)
		}
	}
	if src, ok := cat.Source("env"); !ok || src != env {
		t.Fatal("Source(env) lookup failed")
	}
}

func TestCatalogConfigErrors(t *testing.T) {
	ctx := testCtx(t)
	if _, err := NewCatalog(ctx, []Source{goTools("a", "x"), goTools("a", "y")}, CatalogOptions{}); err == nil ||
		!strings.Contains(err.Error(), "two sources are named 'a'") {
		t.Fatalf("duplicate source names: %v", err)
	}
	if _, err := NewCatalog(ctx, []Source{goTools("a", "x")}, CatalogOptions{Hide: []string{"["}}); err == nil {
		t.Fatal("a malformed pattern was accepted")
	}
	if _, err := NewCatalog(ctx, []Source{NewGoSource("a", GoTool{Tool: Tool{}})}, CatalogOptions{}); !errors.Is(err, ErrInvalidTool) {
		t.Fatalf("a nameless tool: %v", err)
	}
	if _, err := NewCatalog(ctx, []Source{nil}, CatalogOptions{}); err == nil {
		t.Fatal("a nil source was accepted")
	}
}

// TestCatalogRulesWithRealUpstreams applies the rules to real stdio servers.
func TestCatalogRulesWithRealUpstreams(t *testing.T) {
	sup := newSup(t)
	a := startStdio(t, sup, toolsSpec(t, "a", "--only", "add,echo"))
	b := startStdio(t, sup, toolsSpec(t, "b", "--only", "add"))
	_, err := NewCatalog(testCtx(t), []Source{a, b}, CatalogOptions{})
	if !errors.Is(err, ErrDuplicateTool) || !strings.Contains(err.Error(), `Duplicate environment tool name: add (sources "a" and "b")`) {
		t.Fatalf("duplicate add: %v", err)
	}
	r := startStdio(t, sup, toolsSpec(t, "r", "--only", "add,count", "--rename", "add=reset,count=close"))
	_, err = NewCatalog(testCtx(t), []Source{r}, CatalogOptions{})
	if !errors.Is(err, ErrReservedName) || !strings.Contains(err.Error(), "reserved for orchestration controls: close, reset") {
		t.Fatalf("reserved names: %v", err)
	}
}
