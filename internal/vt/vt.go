// Package vt turns the byte stream a program writes to a terminal into plain
// text lines. It parses the control functions of ECMA-48 / VT100-family
// terminals (C0 and C1 controls, CSI, OSC, DCS, SOS/PM/APC strings and
// two-byte escape sequences such as charset designations), drops everything
// that only styles or positions output, and keeps a model of the cursor line
// so that carriage returns, backspaces, erase-in-line and cursor moves within
// the line overwrite text the way a terminal shows it: a spinner drawn with
// "\r|", "\r/", "\r-" leaves only its last frame.
//
// The model is one logical line wide: it does not track the rows of the
// screen, so output of full-screen programs that redraw by moving the cursor
// between rows is approximated (each newline commits a line, row moves are
// ignored). Multi-byte UTF-8 characters and escape sequences may be split
// across writes. Memory is bounded: a line longer than MaxLine characters is
// committed early, and sequence parameters beyond a small limit are dropped.
//
// The package also notices what a terminal must answer (device status and
// attribute queries) and whether the program enabled bracketed paste.
package vt

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxLine is the longest line, in characters, kept before it is committed.
const MaxLine = 64 << 10

// maxParams bounds the parameter bytes kept of one control sequence.
const maxParams = 64

type state uint8

const (
	ground    state = iota
	escape          // after ESC
	escInter        // ESC followed by intermediate bytes (charset designation, ...)
	csi             // control sequence: parameters, intermediates, final
	csiIgnore       // an over-long or malformed control sequence, skipped to its final byte
	str             // OSC, DCS, SOS, PM or APC string, until ST (or BEL for OSC)
	strEsc          // ESC inside a string: ST if followed by '\'
)

// Text is a terminal-output-to-text converter. The zero value is ready to
// use with a 24x80 terminal size for cursor reports. It is not safe for
// concurrent use.
type Text struct {
	st     state
	params []byte // CSI parameter and intermediate bytes
	utf    []byte // a partial UTF-8 sequence carried between writes

	line []rune // the cursor line
	col  int    // cursor column in line
	row  int    // cursor row (0-based), for cursor position reports only

	rows, cols int

	lines    []string // committed lines not yet taken
	replies  []byte   // answers to queries not yet taken
	paste    bool     // bracketed paste mode enabled by the program
	newlines int      // lines committed since creation
}

// SetSize sets the terminal size used for cursor position reports.
func (t *Text) SetSize(rows, cols int) {
	t.rows, t.cols = rows, cols
	t.row = min(t.row, max(rows-1, 0))
}

// Write feeds terminal output. It never fails.
func (t *Text) Write(p []byte) (int, error) {
	n := len(p)
	if len(t.utf) > 0 {
		// A character was split by the previous write.
		p = append(t.utf, p...)
		t.utf = nil
	}
	for len(p) > 0 {
		b := p[0]
		if b < utf8.RuneSelf {
			t.rune(rune(b))
			p = p[1:]
			continue
		}
		if !utf8.FullRune(p) {
			t.utf = append([]byte(nil), p...)
			break
		}
		r, size := utf8.DecodeRune(p)
		t.rune(r)
		p = p[size:]
	}
	return n, nil
}

// WriteString feeds terminal output.
func (t *Text) WriteString(s string) { t.Write([]byte(s)) }

// TakeLines returns the lines committed since the last call, without line
// endings and with trailing blanks removed.
func (t *Text) TakeLines() []string {
	l := t.lines
	t.lines = nil
	return l
}

// Pending returns the cursor line: text written after the last newline,
// with trailing blanks removed.
func (t *Text) Pending() string {
	return strings.TrimRight(string(t.line), " ")
}

// Newlines returns how many lines have been committed since creation.
func (t *Text) Newlines() int { return t.newlines }

// TakeReplies returns the bytes a terminal would send back to the program
// in answer to the queries seen since the last call (device status, cursor
// position, device attributes).
func (t *Text) TakeReplies() []byte {
	r := t.replies
	t.replies = nil
	return r
}

// BracketedPaste reports whether the program has enabled bracketed paste
// mode (CSI ? 2004 h) and not disabled it since.
func (t *Text) BracketedPaste() bool { return t.paste }

// Strip returns s with control sequences removed and carriage returns,
// backspaces and in-line cursor moves applied; lines are joined with "\n"
// and a final unterminated line is kept.
func Strip(s string) string {
	var t Text
	t.WriteString(s)
	lines := t.TakeLines()
	if p := t.Pending(); p != "" || len(t.line) > 0 {
		lines = append(lines, p)
	}
	return strings.Join(lines, "\n")
}

// rune advances the parser by one character.
func (t *Text) rune(r rune) {
	// C0 controls act inside escape and control sequences too, except in
	// strings, where they are part of the (ignored) payload.
	if r < 0x20 && t.st != str && t.st != strEsc {
		switch r {
		case 0x1b:
			t.st = escape
			t.params = t.params[:0]
		case 0x18, 0x1a: // CAN, SUB cancel a sequence
			t.st = ground
		default:
			t.control(r)
		}
		return
	}
	switch t.st {
	case ground:
		t.ground(r)
	case escape:
		t.escape(r)
	case escInter:
		if r >= 0x30 && r <= 0x7e || r > 0x7f {
			t.st = ground // final byte of ESC I.. F (e.g. ESC ( B): designation ignored
		}
	case csi:
		t.csiByte(r)
	case csiIgnore:
		if r >= 0x40 && r <= 0x7e || r > 0x7f {
			t.st = ground
		}
	case str:
		switch r {
		case 0x1b:
			t.st = strEsc
		case 0x07: // BEL ends OSC (xterm)
			t.st = ground
		case 0x9c: // ST
			t.st = ground
		}
	case strEsc:
		if r == '\\' {
			t.st = ground
			return
		}
		// ESC followed by anything else ends the string and starts a sequence.
		t.st = escape
		t.params = t.params[:0]
		t.escape(r)
	}
}

func (t *Text) ground(r rune) {
	switch {
	case r == 0x7f:
	case r >= 0x80 && r < 0xa0:
		t.c1(r)
	default:
		t.put(r)
	}
}

// c1 handles 8-bit controls (as decoded characters U+0080..U+009F).
func (t *Text) c1(r rune) {
	switch r {
	case 0x9b: // CSI
		t.st = csi
		t.params = t.params[:0]
	case 0x9d, 0x90, 0x98, 0x9e, 0x9f: // OSC, DCS, SOS, PM, APC
		t.st = str
	case 0x85: // NEL
		t.newline()
	}
}

// control executes a C0 control.
func (t *Text) control(r rune) {
	switch r {
	case '\r':
		t.col = 0
	case '\n', 0x0b, 0x0c: // LF, VT, FF
		t.newline()
	case '\b':
		if t.col > 0 {
			t.col--
		}
	case '\t':
		next := (t.col/8 + 1) * 8
		for len(t.line) < next && len(t.line) < MaxLine {
			t.line = append(t.line, ' ')
		}
		t.col = min(next, MaxLine)
	}
	// BEL, NUL, SO, SI and the rest have no textual effect.
}

func (t *Text) escape(r rune) {
	t.st = ground
	switch {
	case r == '[':
		t.st = csi
		t.params = t.params[:0]
	case r == ']', r == 'P', r == 'X', r == '^', r == '_': // OSC, DCS, SOS, PM, APC
		t.st = str
	case r >= 0x20 && r <= 0x2f: // intermediate: charset designation etc.
		t.st = escInter
	case r == 'E': // NEL
		t.newline()
	case r == 'D': // IND: line feed
		t.newline()
	case r == 'c': // RIS: full reset
		t.paste = false
		t.col = 0
	}
	// Other finals (ESC 7, ESC 8, ESC =, ESC >, ESC M, ...) do not change text.
}

func (t *Text) csiByte(r rune) {
	switch {
	case r >= 0x20 && r <= 0x3f: // parameters and intermediates
		if len(t.params) >= maxParams {
			t.st = csiIgnore
			return
		}
		t.params = append(t.params, byte(r))
	case r >= 0x40 && r <= 0x7e:
		t.st = ground
		t.dispatch(byte(r))
	default:
		t.st = ground // not a valid sequence: drop it
	}
}

// dispatch executes a complete control sequence.
func (t *Text) dispatch(final byte) {
	p := string(t.params)
	private := ""
	if p != "" && p[0] >= 0x3c && p[0] <= 0x3f {
		private, p = p[:1], p[1:]
	}
	if i := strings.IndexFunc(p, func(r rune) bool { return r >= 0x20 && r <= 0x2f }); i >= 0 {
		// Sequences with intermediates (e.g. CSI SP q cursor style) do not change text.
		return
	}
	args := parseArgs(p)
	arg := func(i, def int) int {
		if i < len(args) && args[i] > 0 {
			return args[i]
		}
		return def
	}
	if private != "" {
		if private == "?" && (final == 'h' || final == 'l') {
			for _, a := range args {
				if a == 2004 {
					t.paste = final == 'h'
				}
			}
		}
		if private == "?" && final == 'n' && arg(0, 0) == 6 { // DECXCPR
			t.reportCursor("?")
		}
		return
	}
	switch final {
	case 'K': // EL: erase in line
		switch arg(0, 0) {
		case 0:
			if t.col < len(t.line) {
				t.line = t.line[:t.col]
			}
		case 1:
			for i := 0; i <= t.col && i < len(t.line); i++ {
				t.line[i] = ' '
			}
		case 2:
			t.line = t.line[:0]
		}
	case 'X': // ECH: erase characters
		for i := t.col; i < t.col+arg(0, 1) && i < len(t.line); i++ {
			t.line[i] = ' '
		}
	case 'P': // DCH: delete characters
		if t.col < len(t.line) {
			end := min(t.col+arg(0, 1), len(t.line))
			t.line = append(t.line[:t.col], t.line[end:]...)
		}
	case '@': // ICH: insert blanks
		if t.col < len(t.line) {
			n := min(arg(0, 1), MaxLine-len(t.line))
			t.line = append(t.line[:t.col], append([]rune(strings.Repeat(" ", n)), t.line[t.col:]...)...)
		}
	case 'C', 'a': // CUF, HPR: cursor forward
		t.col = min(t.col+arg(0, 1), MaxLine)
	case 'D': // CUB: cursor back
		t.col = max(t.col-arg(0, 1), 0)
	case 'G', '`': // CHA, HPA: cursor to column
		t.col = min(arg(0, 1)-1, MaxLine)
	case 'H', 'f': // CUP: cursor position (row ignored for text)
		t.row = t.clampRow(arg(0, 1) - 1)
		t.col = min(arg(1, 1)-1, MaxLine)
	case 'A': // CUU
		t.row = t.clampRow(t.row - arg(0, 1))
	case 'B', 'e': // CUD, VPR
		t.row = t.clampRow(t.row + arg(0, 1))
	case 'd': // VPA
		t.row = t.clampRow(arg(0, 1) - 1)
	case 'E': // CNL: cursor next line
		t.newline()
	case 'n': // DSR
		switch arg(0, 0) {
		case 5:
			t.replies = append(t.replies, "\x1b[0n"...)
		case 6:
			t.reportCursor("")
		}
	case 'c': // DA: primary device attributes
		if arg(0, 0) == 0 {
			t.replies = append(t.replies, "\x1b[?1;2c"...)
		}
	}
	// SGR (m), modes (h, l), scrolling, tabs and the rest do not change text.
}

func (t *Text) reportCursor(private string) {
	col := t.col + 1
	if t.cols > 0 {
		col = min(col, t.cols)
	}
	t.replies = append(t.replies, "\x1b["+private+strconv.Itoa(t.row+1)+";"+strconv.Itoa(col)+"R"...)
}

func (t *Text) clampRow(r int) int {
	rows := t.rows
	if rows <= 0 {
		rows = 24
	}
	return min(max(r, 0), rows-1)
}

func parseArgs(p string) []int {
	if p == "" {
		return nil
	}
	var out []int
	for _, f := range strings.FieldsFunc(p, func(r rune) bool { return r == ';' || r == ':' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			n = 0
		}
		out = append(out, min(n, 1<<20))
	}
	return out
}

// put writes a printable character at the cursor.
func (t *Text) put(r rune) {
	if t.col >= MaxLine {
		t.newline()
	}
	for len(t.line) < t.col {
		t.line = append(t.line, ' ')
	}
	if t.col < len(t.line) {
		t.line[t.col] = r
	} else {
		t.line = append(t.line, r)
	}
	t.col++
}

// newline commits the cursor line.
func (t *Text) newline() {
	t.lines = append(t.lines, strings.TrimRight(string(t.line), " "))
	t.newlines++
	t.line = t.line[:0]
	t.col = 0
	t.row = t.clampRow(t.row + 1)
}
