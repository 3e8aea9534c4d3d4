package termtext

import (
	"encoding/json"
	"fmt"
	"testing"
)

// Escape writes what a terminal would act on as visible escapes, and
// leaves every other character, tabs and non-ASCII text included, alone.
func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, tabs\tand ünïcödé ✓": "plain text, tabs\tand ünïcödé ✓",
		"":                                "",
		"a\x1b]52;c;cm0K\x1b\\b":          `a\x1b]52;c;cm0K\x1b\b`,
		"x\n\x1b[1A\x1b[2K\rreward=1":     `x\n\x1b[1A\x1b[2K\rreward=1`,
		"nul\x00 del\x7f bell\a":          `nul\x00 del\x7f bell\x07`,
		"c1 \u009b2J":                     `c1 \u009b2J`,
		"bad \xff\xfe utf8":               `bad \xff\xfe utf8`,
		"bidi \u202egnp.exe":              `bidi \u202egnp.exe`,
		"isolate \u2066x\u2069":           `isolate \u2066x\u2069`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// A string with nothing to escape is not copied.
func TestEscapeDoesNotAllocatePlainText(t *testing.T) {
	s := "a line of ordinary text with ünïcödé"
	if n := testing.AllocsPerRun(100, func() { _ = Escape(s) }); n != 0 {
		t.Errorf("Escape of plain text allocated %v times", n)
	}
}

// Lines keeps a block's lines apart, each escaped and prefixed: a line of
// the block that reads like the program's own ("task t: reward 1") stays
// marked as the block's.
func TestLines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"one", "  | one"},
		{"a\nb\n", "  | a\n  | b"},
		{"err\ntask t: reward 1\r\x1b[2K", "  | err\n  | task t: reward 1\\r\\x1b[2K"},
		{"", "  | "},
	} {
		if got := Lines(c.in, "  | "); got != c.want {
			t.Errorf("Lines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// EscapeJSONText writes as JSON escapes only what a JSON encoder leaves
// raw: DEL, C1, bidirectional overrides; the text decodes to the same.
func TestEscapeJSONText(t *testing.T) {
	for in, want := range map[string]string{
		`{"msg":"plain ünïcödé\ttab"}`:      `{"msg":"plain ünïcödé\ttab"}`,
		"{\"a\":\"c1 \u009b2J del\x7f\"}":   `{"a":"c1 \u009b2J del\u007f"}`,
		"{\"b\":[\"bidi \u202egnp.exe\"]}":  `{"b":["bidi \u202egnp.exe"]}`,
		`{"esc":"\u001b[2K and\nnew line"}`: `{"esc":"\u001b[2K and\nnew line"}`,
	} {
		got := string(EscapeJSONText([]byte(in)))
		if got != want {
			t.Errorf("EscapeJSONText(%q) = %q, want %q", in, got, want)
		}
		var a, b any
		if json.Unmarshal([]byte(in), &a) != nil || json.Unmarshal([]byte(got), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%q decodes to %v, its escape %q to %v", in, a, got, b)
		}
	}
	plain := []byte(`{"msg":"a plain line"}`)
	if n := testing.AllocsPerRun(100, func() { _ = EscapeJSONText(plain) }); n != 0 {
		t.Errorf("plain text allocated %v times", n)
	}
}
