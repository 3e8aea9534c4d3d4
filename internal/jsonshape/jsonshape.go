// Package jsonshape checks the shape of JSON that came from outside harnessd
// (a harness's lines, an agent's tool inputs, a tool server's results)
// before the daemon passes it on to a trainer: its nesting depth, the length
// and range of its number literals, and lone UTF-16 surrogate escapes. Go's
// decoder takes JSON ten thousand levels deep and numbers of any length or
// size into a raw value, and keeps a raw value's "\ud800" as it came; a
// trainer's Python decoder fails at about a thousand levels
// (RecursionError), refuses an integer of more than 4,300 digits, makes
// 1e400 an infinity it writes back as Infinity (not JSON), and turns a lone
// surrogate into a string that cannot be encoded; Go's decoder refuses 1e400
// into an any (harnessd's own client failed the step). It owns that scan and
// nothing else: what to do with a value that fails it is its callers'
// (wire's decoder refuses the harness's line; the event log drops the
// event). It imports no harnessd package but jsonscan.
package jsonshape

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/harnessd/harnessd/internal/jsonscan"
)

// The bounds a value must keep.
const (
	// MaxDepth is the deepest nesting of arrays and objects taken, well
	// under a Python decoder's recursion limit with the frame's own levels
	// around the value.
	MaxDepth = 128
	// MaxNumberLen is the longest number literal taken, in bytes.
	MaxNumberLen = 1000
)

// Check reports the first way b, a JSON text, breaks the bounds: nested
// deeper than MaxDepth, a number literal longer than MaxNumberLen, or one
// beyond float64's range. It does not validate b otherwise; nil for
// well-shaped (or not JSON) text.
func Check(b []byte) error {
	depth, num, exp := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if isNumberByte(c) {
			if num++; num > MaxNumberLen {
				return fmt.Errorf("a number literal longer than %d characters", MaxNumberLen)
			}
			if c >= 'E' {
				exp = true // 'e' or 'E': the rest of the number bytes sort below 'E'
			}
			continue
		}
		if (exp || num > maxPlainDigits) && overflows(b[i-num:i]) {
			return fmt.Errorf("a number literal beyond float64's range (%.40s)", b[i-num:i])
		}
		num, exp = 0, false
		switch c {
		case '"':
			end := jsonscan.String(b, i)
			if end < 0 {
				return nil // b ends inside the string
			}
			i = end - 1
		case '{', '[':
			if depth++; depth > MaxDepth {
				return fmt.Errorf("arrays and objects nested deeper than %d levels", MaxDepth)
			}
		case '}', ']':
			depth--
		}
	}
	if (exp || num > maxPlainDigits) && overflows(b[len(b)-num:]) {
		return fmt.Errorf("a number literal beyond float64's range (%.40s)", b[len(b)-num:])
	}
	return nil
}

// maxPlainDigits is the longest number literal without an exponent that
// cannot exceed float64's range (1.8e308 has 309 digits).
const maxPlainDigits = 308

// overflows says lit, a run of number bytes with an exponent or longer
// than maxPlainDigits (only those can be), is a number beyond float64's
// range. The "e" of true and false is not a number: it starts with no
// digit or sign.
func overflows(lit []byte) bool {
	if c := lit[0]; c != '-' && (c < '0' || c > '9') {
		return false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	return err != nil && math.IsInf(f, 0)
}

// isNumberByte says c may be part of a number literal.
func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// HasLoneSurrogate says whether b holds a \u escape of a UTF-16 surrogate
// that is not half of a pair (a cheap first look: ReplaceLoneSurrogates
// does the work).
func HasLoneSurrogate(b []byte) bool {
	_, n := replaceLone(b, false)
	return n > 0
}

// ReplaceLoneSurrogates returns b with every \u escape of a lone surrogate
// (a high one not followed by a low one's escape, or a low one alone)
// written \ufffd, the replacement character Go's decoder makes of one in a
// string; a pair stays as it is. b itself is returned when it has none.
func ReplaceLoneSurrogates(b []byte) []byte {
	out, _ := replaceLone(b, true)
	return out
}

// replaceLone finds (and, with rewrite, replaces) the lone surrogate
// escapes of b's strings.
func replaceLone(b []byte, rewrite bool) ([]byte, int) {
	if !bytes.Contains(b, []byte(`\u`)) {
		return b, 0
	}
	var out []byte
	n, last := 0, 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		for i++; i < len(b) && b[i] != '"'; i++ {
			if b[i] != '\\' {
				continue
			}
			r, ok := escapedUnit(b, i)
			if !ok {
				i++ // another escape: skip its letter
				continue
			}
			switch {
			case r >= 0xd800 && r < 0xdc00:
				if low, ok := escapedUnit(b, i+6); ok && low >= 0xdc00 && low < 0xe000 {
					i += 11 // the pair: both escapes
					continue
				}
			case r >= 0xdc00 && r < 0xe000:
			default:
				i += 5
				continue
			}
			n++
			if rewrite {
				out = append(append(out, b[last:i]...), `\ufffd`...)
				last = i + 6
			}
			i += 5
		}
	}
	if !rewrite || n == 0 {
		return b, n
	}
	return append(out, b[last:]...), n
}

// escapedUnit decodes the \uXXXX escape at b[i] (i at its backslash).
func escapedUnit(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}
