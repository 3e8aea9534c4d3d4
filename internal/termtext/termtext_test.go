package termtext

import "testing"

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
