package vt

import (
	"strings"
	"testing"
)

func TestStrip(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "hello\r\nworld", "hello\nworld"},
		{"sgr colours", "\x1b[1;32mgreen\x1b[0m and \x1b[38;5;196mred\x1b[m", "green and red"},
		{"truecolor with colons", "\x1b[38:2:255:0:0mx\x1b[0m", "x"},
		{"carriage return overwrites", "abcdef\rXY\n", "XYcdef"},
		{"spinner frames", "|\r/\r-\r\\\r\x1b[Kdone\r\n", "done"},
		{"erase in line 0", "abcdef\x1b[3D\x1b[K\n", "abc"},
		{"erase in line 1", "abcdef\x1b[3D\x1b[1K\n", "    ef"},
		{"erase in line 2", "abcdef\x1b[2Kxy\n", "      xy"},
		{"erase whole line after cr", "abcdef\r\x1b[2Kxy\n", "xy"},
		{"backspace", "abc\b\bX\n", "aXc"},
		{"backspace at start", "\b\bab\n", "ab"},
		{"tab", "a\tb\n", "a       b"},
		{"cursor forward pads", "a\x1b[3Cb\n", "a   b"},
		{"cursor to column", "abcdef\x1b[2GX\n", "aXcdef"},
		{"cursor position same row", "abc\x1b[1;2HX\n", "aXc"},
		{"cursor position lower row", "abc\x1b[3;2HX", "abc\n\n X"},
		// bash 5.2 echoing a bracketed paste, then redrawing it unhighlighted
		{"readline multi-line redraw", "\x1b[?2004hbash-pty> \x1b[7mecho one\x1b[27m\r\n\r\x1b[7mecho two\x1b[27m\x1b[A\x1b[C\x1b[Cecho one\r\n\recho two\r\n\x1b[?2004l\rone\r\ntwo\r\n\x1b[?2004hbash-pty> ", "bash-pty> echo one\necho two\none\ntwo\nbash-pty>"},
		{"erase lines and redraw", "out\r\n| working\r\n[input]\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K\rout\r\nresult\r\n[input]", "out\nresult\n[input]"},
		{"cursor up and down", "a\r\nb\r\nc\x1b[2AX\x1b[2BY", "aX\nb\nc Y"},
		{"reverse index", "a\r\nb\x1bMX", "aX\nb"},
		{"erase below", "a\r\nb\r\nc\x1b[2A\x1b[J", "a"},
		{"erase screen keeps rows", "a\r\nb\x1b[2Jc", "\n c"},
		{"insert line", "a\r\nb\x1b[A\x1b[Lx", "x\na\nb"},
		{"delete line", "a\r\nb\r\nc\x1b[2A\x1b[M", "b\nc"},
		{"next and previous line", "abc\x1b[2Ex\x1b[Fy", "abc\ny\nx"},
		{"delete chars", "abcdef\x1b[2D\x1b[P\n", "abcdf"},
		{"insert blanks", "abcd\x1b[2D\x1b[2@\n", "ab  cd"},
		{"erase chars", "abcd\x1b[4D\x1b[2X\n", "  cd"},
		{"osc title bel", "\x1b]0;my title\x07text", "text"},
		{"osc hyperlink st", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"dcs string", "a\x1bPq#0;2;0;0;0#0~~@@\x1b\\b", "ab"},
		{"apc pm sos", "\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\ok", "ok"},
		{"charset designation", "\x1b(Bplain\x1b)0\x1b(0x\x1b(B", "plainx"},
		{"keypad and save cursor", "\x1b=\x1b>\x1b7a\x1b8b", "ab"},
		{"private modes", "\x1b[?25l\x1b[?1049h\x1b[?2004hx\x1b[?25h", "x"},
		{"cursor style intermediates", "\x1b[2 qx", "x"},
		{"c1 csi as character", "a\u009b31mb", "ab"},
		{"c1 osc", "a\u009d0;t\u009cb", "ab"},
		{"cancel sequence", "a\x1b[12\x18b", "ab"},
		{"control inside csi executes", "ab\x1b[\r31mX", "Xb"},
		{"erase chars final after control", "ab\x1b[1\rX", " b"},
		{"esc restarts sequence", "a\x1b[1\x1b[31mb", "ab"},
		{"utf8", "héllo \u4e16\u754c\r\n", "héllo 世界"},
		{"invalid utf8", "a\xffb", "a\ufffdb"},
		{"bel and nul ignored", "a\x07\x00b", "ab"},
		{"del ignored", "a\x7fb", "ab"},
		{"trailing blanks trimmed", "abc   \r\n   \r\n", "abc\n"},
		{"nel", "a\x1bEb", "a\nb"},
		{"ind keeps column", "a\x1bDb", "a\n b"},
		{"crlf pty output", "line1\r\nline2\r\n", "line1\nline2"},
		{"overlong csi ignored", "a\x1b[" + strings.Repeat("1;", 100) + "mb", "ab"},
		{"unterminated csi", "ab\x1b[", "ab"},
	}
	for _, c := range cases {
		if got := Strip(c.in); got != c.want {
			t.Errorf("%s: Strip(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// Feeding output in pieces, however split, gives the same text.
func TestSplitWritesEquivalent(t *testing.T) {
	inputs := []string{
		"\x1b[1;32mtestharness>\x1b[0m reply hé \u4e16\r\n\x1b]0;t\x07ok\r\x1b[K|\r/\rdone\x1bP1$r\x1b\\\r\n",
		"\x1b[38;2;1;2;3mcolour\x1b[0m\u009b1mX\u009c\r\n",
	}
	for _, in := range inputs {
		feed := func(size int) string {
			var tx Text
			b := []byte(in)
			for len(b) > 0 {
				n := min(size, len(b))
				tx.Write(b[:n])
				b = b[n:]
			}
			tx.Settle()
			return strings.Join(append(tx.TakeLines(), tx.Pending()), "\n")
		}
		want := feed(len(in))
		if !strings.Contains(want, "done") && !strings.Contains(want, "colourX") {
			t.Fatalf("whole write: %q", want)
		}
		for size := 1; size <= 5; size++ {
			if got := feed(size); got != want {
				t.Errorf("split %d: %q, want %q", size, got, want)
			}
		}
	}
}

func TestLinesAndPending(t *testing.T) {
	var tx Text
	tx.WriteString("\x1b[1;32mtestharness>\x1b[0m ")
	if p := tx.Pending(); p != "testharness>" {
		t.Fatalf("pending %q", p)
	}
	if b := tx.BeforeCursor(); b != "testharness> " {
		t.Fatalf("before cursor %q", b)
	}
	tx.WriteString("placeholder\x1b[11D")
	if b := tx.BeforeCursor(); b != "testharness> " || tx.Pending() != "testharness> placeholder" {
		t.Fatalf("before cursor with placeholder %q", b)
	}
	tx.WriteString("\x1b[K")
	tx.WriteString("reply hi\r\nhi\r\n\x1b[1;32mtestharness>\x1b[0m ")
	if l := tx.TakeLines(); l != nil {
		t.Fatalf("lines settled early: %q", l)
	}
	if w := tx.Window(); len(w) != 2 || w[0] != "testharness> reply hi" || w[1] != "hi" {
		t.Fatalf("window %q", w)
	}
	tx.Settle()
	if w := tx.Window(); len(w) != 0 {
		t.Fatalf("window after settle %q", w)
	}
	if l := tx.TakeLines(); len(l) != 2 || l[0] != "testharness> reply hi" || l[1] != "hi" {
		t.Fatalf("lines %q", l)
	}
	if tx.TakeLines() != nil {
		t.Fatal("lines taken twice")
	}
	if tx.Newlines() != 2 {
		t.Fatalf("newlines %d", tx.Newlines())
	}
}

func TestRepliesAndModes(t *testing.T) {
	var tx Text
	tx.SetSize(40, 120)
	tx.WriteString("abc\x1b[6n\x1b[5n\x1b[c\x1b[>c\x1b[?6n")
	if r := string(tx.TakeReplies()); r != "\x1b[1;4R\x1b[0n\x1b[?1;2c\x1b[?1;4R" {
		t.Fatalf("replies %q", r)
	}
	if tx.TakeReplies() != nil {
		t.Fatal("replies taken twice")
	}
	tx.WriteString("\r\n\r\n\x1b[6n")
	if r := string(tx.TakeReplies()); r != "\x1b[3;1R" {
		t.Fatalf("after newlines %q", r)
	}
	tx.WriteString("\x1b[10;7H\x1b[6n")
	if r := string(tx.TakeReplies()); r != "\x1b[10;7R" {
		t.Fatalf("after cup %q", r)
	}
	if tx.BracketedPaste() {
		t.Fatal("paste on by default")
	}
	tx.WriteString("\x1b[?1;2004h")
	if !tx.BracketedPaste() {
		t.Fatal("paste not enabled")
	}
	tx.WriteString("\x1b[?2004l")
	if tx.BracketedPaste() {
		t.Fatal("paste not disabled")
	}
}

func TestBoundedLine(t *testing.T) {
	var tx Text
	tx.WriteString(strings.Repeat("x", MaxLine+10))
	tx.Settle()
	l := tx.TakeLines()
	if len(l) != 1 || len(l[0]) != MaxLine || tx.Pending() != strings.Repeat("x", 10) {
		t.Fatalf("lines %d, pending %d", len(l), len(tx.Pending()))
	}
	tx.WriteString("\x1b[999999999C\x1b[999999999@y")
	if len([]rune(tx.Pending())) > MaxLine+1 {
		t.Fatalf("line grew to %d", len(tx.Pending()))
	}
}

func TestScrollSettles(t *testing.T) {
	var tx Text
	tx.SetSize(3, 80)
	tx.WriteString("1\r\n2\r\n3\r\n4\r\n5")
	if l := tx.TakeLines(); len(l) != 2 || l[0] != "1" || l[1] != "2" {
		t.Fatalf("scrolled off: %q", l)
	}
	if w := tx.Window(); len(w) != 2 || w[0] != "3" || w[1] != "4" || tx.Pending() != "5" {
		t.Fatalf("window %q pending %q", w, tx.Pending())
	}
	// After settling, the window starts at the cursor's screen row; moving
	// above it writes into a fresh row rather than into settled text.
	tx.Settle()
	tx.TakeLines()
	tx.WriteString("\x1b[1;1HX\x1b[3;2HY")
	if w := tx.Window(); len(w) != 2 || w[0] != "X" || w[1] != "" || tx.Pending() != "5Y" {
		t.Fatalf("above settled rows: %q, pending %q", w, tx.Pending())
	}
	// Shrinking the terminal settles what no longer fits above the cursor.
	tx.SetSize(1, 80)
	if l := tx.TakeLines(); len(l) != 2 || l[0] != "X" || len(tx.Window()) != 0 || tx.Pending() != "5Y" {
		t.Fatalf("after shrink: %q, window %q", l, tx.Window())
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"\x1b[31mx", "\x1b]0;a\x07", "a\rb\bc\x1b[K", "\x1bP\x1b\\", "\u009b5n", "\xe4\xb8",
		"a\r\nb\x1b[9A\x1b[3Lc\x1b[2M\x1bM\x1b[99;99H\x1b[J"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var tx Text
		tx.SetSize(5, 20)
		tx.Write(b)
		tx.Write(b)
		if w := tx.Window(); len(w) > 4 {
			t.Fatalf("window of %d rows", len(w))
		}
		tx.Settle()
		for _, l := range tx.TakeLines() {
			if strings.ContainsAny(l, "\x1b\r\n") {
				t.Fatalf("control left in line %q", l)
			}
		}
		if p := tx.Pending(); strings.ContainsAny(p, "\x1b\r\n") {
			t.Fatalf("control left in pending %q", p)
		}
	})
}
