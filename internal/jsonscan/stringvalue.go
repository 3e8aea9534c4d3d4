package jsonscan

import (
	"encoding/json"
	"unicode/utf8"
)

// StringValue reads raw as one JSON string (JSON white space about it
// allowed); ok is false for any other value, and for a string
// encoding/json refuses. A string without escapes
// is taken as it is, without a decoder; one with escapes (or bytes that
// are not UTF-8) is decoded by encoding/json. It is the one place the
// fast paths turn a JSON string into a Go string.
func StringValue(raw []byte) (string, bool) {
	raw = trimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; plainStringBytes(inner) {
		return string(inner), true
	}
	return decodeString(raw)
}

// trimSpace is b without the JSON white space about it: not
// bytes.TrimSpace, which takes \v, \f, U+0085 and U+00A0 too, where
// encoding/json refuses the value.
func trimSpace(b []byte) []byte {
	b = b[Space(b, 0):]
	n := len(b)
	for n > 0 && (b[n-1] == ' ' || b[n-1] == '\t' || b[n-1] == '\n' || b[n-1] == '\r') {
		n--
	}
	return b[:n]
}

// decodeString is StringValue's slow path, apart so that its decoder's
// pointer does not move the fast path's result to the heap.
func decodeString(raw []byte) (string, bool) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// plainStringBytes reports whether b may stand between a string's quotes
// as it is: no quote, no escape, no control byte, valid UTF-8.
func plainStringBytes(b []byte) bool {
	for _, c := range b {
		if c == '"' || c == '\\' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(b)
}
