package wire

import "github.com/harnessd/harnessd/internal/jsonscan"

// objectKeys calls f with each top-level key of the JSON object b, in
// order, until f returns false. b must be valid JSON (callers run it after
// json.Unmarshal accepted it). It reports false when it cannot tell — b is
// not an object, or a key has an escape sequence or non-ASCII bytes — so
// that callers fall back
// to a full decode. It lets decoding find extra or missing keys without
// decoding the object a second time.
func objectKeys(b []byte, f func(key []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return true
		case ',':
			i++
			continue
		case '"':
		default:
			return false
		}
		start := i + 1
		end := start
		for end < len(b) && b[end] != '"' {
			if b[end] == '\\' || b[end] >= 0x80 {
				return false // escapes and non-ASCII keys: let a full decode say
			}
			end++
		}
		if end >= len(b) {
			return false
		}
		if !f(b[start:end]) {
			return true
		}
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		if i = skipValue(b, i+1); i < 0 {
			return false
		}
	}
}

func skipSpace(b []byte, i int) int { return jsonscan.Space(b, i) }

// skipValue returns the index just past the JSON value starting at or after
// i, or -1 when b ends first.
func skipValue(b []byte, i int) int {
	i = skipSpace(b, i)
	if i < len(b) && endsScalar(b[i]) {
		return i // no value here: the caller's next check decides
	}
	return jsonscan.Value(b, i, 0)
}

// endsScalar reports whether c ends a scalar value.
func endsScalar(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
