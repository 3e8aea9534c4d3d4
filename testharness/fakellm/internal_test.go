package fakellm

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestResolveTool(t *testing.T) {
	tools := []tool{
		{name: "harness_echo_v2"},
		{name: "mcp__harness__harness_echo"},
		{name: "harness_echo", namespace: "mcp__harness"},
		{name: "x_echo"},
		{name: "Echo_Tool"},
	}
	cases := []struct {
		spec, want, ns string
		ok             bool
	}{
		{"mcp__harness__harness_echo", "mcp__harness__harness_echo", "", true}, // exact full name beats the namespaced twin
		{"harness_echo", "harness_echo", "mcp__harness", true},                 // exact bare name of a namespaced tool
		{"_echo", "x_echo", "", true},                                          // suffix, shortest wins
		{"echo_v", "harness_echo_v2", "", true},                                // contains
		{"echo_tool", "Echo_Tool", "", true},                                   // case-insensitive fallback
		{"nothing", "", "", false},
		{"", "", "", false},
	}
	for _, c := range cases {
		got, ok := resolveTool(c.spec, tools)
		if ok != c.ok || got.name != c.want || got.namespace != c.ns {
			t.Errorf("resolveTool(%q) = %+v %v, want %s/%s %v", c.spec, got, ok, c.ns, c.want, c.ok)
		}
	}
	// Ties in a tier go to the first offered.
	if got, _ := resolveTool("echo", []tool{{name: "a_echo"}, {name: "b_echo"}}); got.name != "a_echo" {
		t.Errorf("tie: %+v", got)
	}
	if got := (tool{name: "t", namespace: "ns_"}).fullName(); got != "ns_t" {
		t.Errorf("fullName %q", got)
	}
}

func TestCleanToolResult(t *testing.T) {
	cases := map[string]string{
		"ECHO:ping": "ECHO:ping",
		"<untrusted_context>\nECHO:ping\n</untrusted_context>":    "ECHO:ping",
		"Wall time: 0.0035 seconds\nOutput:\nECHO:ping":           "ECHO:ping",
		"Exit code: 0\nWall time: 1 seconds\nOutput:\nline\nmore": "line\nmore",
		"<a>one</a><a>two</a>":                                    "<a>one</a><a>two</a>",
		"<a>one</b>":                                              "<a>one</b>",
		"prefix <x>y</x>":                                         "prefix <x>y</x>",
	}
	for in, want := range cases {
		if got := cleanToolResult(in); got != want {
			t.Errorf("cleanToolResult(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUserText(t *testing.T) {
	cases := []struct {
		parts []string
		want  string
	}{
		{[]string{"<system-reminder>\nx\n</system-reminder>", "real"}, "real"},
		{[]string{"<environment_context>\n  <cwd>/</cwd>\n</environment_context>"}, ""},
		{[]string{`"quoted \"msg\""`}, `quoted "msg"`},
		{[]string{`"not closed`}, `"not closed`},
		{[]string{"a", "", "b"}, "a\nb"},
		{[]string{"<b>bold</b> text"}, "<b>bold</b> text"},
	}
	for _, c := range cases {
		if got := userText(c.parts); got != c.want {
			t.Errorf("userText(%q) = %q, want %q", c.parts, got, c.want)
		}
	}
}

func TestFlexText(t *testing.T) {
	cases := map[string]string{
		`"s"`: "s",
		`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`: "a\nb",
		`{"output":"o"}`:               "o",
		`{"content":[{"text":"c"}]}`:   "c",
		`{"result":{"text":"r"}}`:      "r",
		`{"other": 1}`:                 `{"other":1}`,
		`null`:                         "",
		`42`:                           "42",
		`[{"type":"image","data":""}]`: `{"type":"image","data":""}`,
	}
	for in, want := range cases {
		if got := flexText(json.RawMessage(in)); got != want {
			t.Errorf("flexText(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestChunks(t *testing.T) {
	s := strings.Repeat("é", 20) + "abc"
	parts := chunks(s, 5)
	if strings.Join(parts, "") != s {
		t.Fatalf("chunks lose text: %q", parts)
	}
	for _, p := range parts {
		if !utf8.ValidString(p) {
			t.Errorf("chunk %q splits a rune", p)
		}
	}
	if chunks("", 5) != nil {
		t.Error("empty text gives chunks")
	}
}
