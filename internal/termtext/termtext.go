// Package termtext makes text that a harness controls safe to write to a
// person's terminal: control characters (escape sequences, carriage
// returns, new lines that would start a forged line) and bidirectional
// overrides become visible escapes. It owns that one rule; it must not
// decide what is printed or where (the printer, eval's progress lines and
// the daemon's terminal log call it).
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character a terminal would act on rather
// than show written as an escape: C0 controls but tab (\n, \r, \x1b), DEL,
// C1 controls (\u009b), bytes that are not UTF-8 (\xff), and the
// bidirectional embeddings, overrides and isolates (\u202e) that reorder
// what a line shows. s comes back as it is, without a copy, when it has
// none of them.
func Escape(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case unsafe(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// EscapeJSONText returns b, a JSON text (one log record, say), with what
// a JSON encoder leaves as it is inside strings written as JSON escapes:
// DEL, C1 controls and bidirectional overrides (it escapes C0 controls
// itself and replaces bytes that are not UTF-8). Those characters can
// stand only inside JSON strings, so the result is the same JSON to a
// decoder; read on a terminal, it cannot act on them (U+009B, C1's CSI, is
// an escape sequence's start to a terminal that takes 8-bit controls). b
// comes back as it is when it has none.
func EscapeJSONText(b []byte) []byte {
	i := firstBeyondJSON(b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if beyondJSON(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// beyondJSON says whether r is one a JSON encoder leaves raw that a
// terminal acts on.
func beyondJSON(r rune) bool { return r >= 0x20 && r != utf8.RuneError && unsafe(r) }

// firstBeyondJSON is the index of b's first character EscapeJSONText
// rewrites, or -1.
func firstBeyondJSON(b []byte) int {
	for i := 0; i < len(b); {
		if c := b[i]; c < utf8.RuneSelf {
			if c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if beyondJSON(r) {
			return i
		}
		i += n
	}
	return -1
}

// Lines returns s as lines for a terminal, each escaped as Escape escapes
// (\r included) and started with prefix, so that a line of s cannot pass
// for one of the program's own: a block of a harness's or a task's output
// (a stderr tail) kept readable. A final new line of s adds no empty line;
// the result ends without one.
func Lines(s, prefix string) string {
	s = strings.TrimSuffix(s, "\n")
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(prefix)
		b.WriteString(Escape(line))
	}
	return b.String()
}

// firstUnsafe is the index of s's first character Escape rewrites, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || unsafe(r) {
			return i
		}
		i += n
	}
	return -1
}

// unsafe says whether a terminal acts on r instead of showing it.
func unsafe(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\t'
	case r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
