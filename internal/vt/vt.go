// Package vt turns the byte stream a program writes to a terminal into plain
// text lines. It parses the control functions of ECMA-48 / VT100-family
// terminals (C0 and C1 controls, CSI, OSC, DCS, SOS/PM/APC strings and
// two-byte escape sequences such as charset designations), drops everything
// that only styles output, and applies what moves the cursor or erases to a
// model of the bottom of the screen, so that text reads the way a terminal
// shows it: a spinner drawn with "\r|", "\r/", "\r-" leaves only its last
// frame, and a line editor that moves up to redraw a multi-line input leaves
// that input once.
//
// The model is a window of screen rows ending at the cursor's row (at most
// the terminal's height). A row becomes final ("settled") when it scrolls off
// the top of the screen or when the caller settles the rows above the cursor
// (Settle), for example at the end of a conversational turn. Rows are
// logical: text longer than the width is not wrapped. Approximations: the
// alternate screen and scrolling regions are not modelled, and a program that
// moves the cursor above the rows already settled writes into fresh rows.
//
// Multi-byte UTF-8 characters and sequences may be split across writes.
// Memory is bounded: a row longer than MaxLine characters is broken, the
// window holds at most MaxRows rows, and sequence parameters beyond a small
// limit are dropped.
//
// Generation counts the writes that may change what the model shows, so that
// a caller looking at the window per write copies it only after a change.
//
// The package also notices what a terminal must answer (device status and
// attribute queries) and whether the program enabled bracketed paste.
package vt

import "strings"

// Limits of the model.
const (
	MaxLine = 64 << 10 // characters in one row
	MaxRows = 1000     // rows of the window (terminal height used)
)

// Text is a terminal-output-to-text converter. The zero value is ready to
// use for a 24x80 terminal. It is not safe for concurrent use.
type Text struct {
	parser
	screen
}

// SetSize sets the terminal size (rows bound the window; both are used in
// cursor position reports).
func (t *Text) SetSize(rows, cols int) {
	t.rows, t.cols = rows, cols
	t.clampWindow()
}

// Write feeds terminal output. It never fails.
func (t *Text) Write(p []byte) (int, error) {
	t.feed(p, &t.screen)
	return len(p), nil
}

// WriteString feeds terminal output.
func (t *Text) WriteString(s string) { t.Write([]byte(s)) }

// TakeLines returns the rows settled since the last call, in order, with
// trailing blanks removed.
func (t *Text) TakeLines() []string {
	l := t.settled
	t.settled = nil
	return l
}

// Settle makes the rows above the cursor final: TakeLines returns them next.
func (t *Text) Settle() {
	t.ensure()
	t.gen++
	for _, l := range t.win[:t.crow] {
		t.settled = append(t.settled, trim(l))
	}
	t.win = append(t.win[:0], t.win[t.crow:]...)
	t.top += t.crow
	t.crow = 0
}

// Window returns the rows above the cursor that are not settled yet.
func (t *Text) Window() []string {
	t.ensure()
	out := make([]string, t.crow)
	for i, l := range t.win[:t.crow] {
		out[i] = trim(l)
	}
	return out
}

// WindowLen returns how many rows Window would return, without copying
// them.
func (t *Text) WindowLen() int {
	t.ensure()
	return t.crow
}

// Generation counts the writes that may have changed the terminal's rows or
// its cursor (text, cursor moves, erasures, line feeds, Settle, SetSize);
// styles, bells, queries and the rest leave it as it is. While it stays
// the same, so do Window, Pending, BeforeCursor and Newlines: a caller that
// looks at them per write compares generations first and copies only when
// something may have changed.
func (t *Text) Generation() uint64 { return t.gen }

// Pending returns the cursor's row with trailing blanks removed.
func (t *Text) Pending() string {
	t.ensure()
	return trim(t.win[t.crow])
}

// BeforeCursor returns the cursor's row up to the cursor, blanks included:
// where a prompt waits for input.
func (t *Text) BeforeCursor() string {
	t.ensure()
	l := t.win[t.crow]
	if t.col <= len(l) {
		return string(l[:t.col])
	}
	return string(l) + strings.Repeat(" ", t.col-len(l))
}

// BeforeCursorTail is BeforeCursor's last n characters at most (all of
// it when shorter): what a check at every change of a long line may read
// without costing the line's whole length each time.
func (t *Text) BeforeCursorTail(n int) string {
	t.ensure()
	l := t.win[t.crow]
	pad := max(t.col-len(l), 0)
	end := min(t.col, len(l))
	if pad >= n {
		return strings.Repeat(" ", n)
	}
	start := max(end-(n-pad), 0)
	return string(l[start:end]) + strings.Repeat(" ", pad)
}

// Newlines returns how many line feeds the program has written.
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

// Strip returns s as text: control sequences removed, cursor movement and
// erasure applied, rows joined with "\n"; an empty last row is dropped.
func Strip(s string) string {
	var t Text
	t.rows = MaxRows
	t.WriteString(s)
	t.ensure()
	lines := t.TakeLines()
	for _, l := range t.win {
		lines = append(lines, trim(l))
	}
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	return strings.Join(lines, "\n")
}

func trim(l []rune) string { return strings.TrimRight(string(l), " ") }
