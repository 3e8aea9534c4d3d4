// Package jsonscan finds where JSON values end in a byte slice without
// decoding them: the scanning that harnessd's fast paths (the wire
// package's event lines, the gateway's cuts of request and answer bodies)
// share, and the one reading of a JSON string into a Go string
// (StringValue) that the server's and the gateway's fast paths share. It
// tells brackets and strings apart and nothing more: it is not a
// validator, and its callers validate what they keep or fall back to
// encoding/json. It owns no types and must not import harnessd packages.
package jsonscan

// Space returns the index of the first byte at or after i that is not
// JSON white space (len(b) when there is none).
func Space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// String returns the index just past the string starting at b[i] (a
// '"'), or -1 when b ends inside it.
func String(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// Value returns the index just past the value starting at b[i]: a string,
// an object or list (to its matching bracket), or a scalar (to the next
// comma, bracket or white space). It returns -1 when b ends first, when
// there is no value at i, or when an object or list nests deeper than
// maxDepth (0: no bound).
func Value(b []byte, i, maxDepth int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return String(b, i)
	case '{', '[':
		return closing(b, i, 0, maxDepth)
	}
	j := i
	for j < len(b) && !endsScalar(b[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// Rest returns the index just past the bracket that closes the object or
// list whose remaining items start at b[i] (after a comma, say), or -1 as
// Value does.
func Rest(b []byte, i, maxDepth int) int {
	return closing(b, i, 1, maxDepth)
}

// closing scans from b[i] at the given depth to the bracket that brings it
// to zero.
func closing(b []byte, i, depth, maxDepth int) int {
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := String(b, i)
			if j < 0 {
				return -1
			}
			i = j - 1
		case '{', '[':
			if depth++; maxDepth > 0 && depth > maxDepth {
				return -1
			}
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

func endsScalar(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// Elements calls f with each element of the JSON array b (leading and
// trailing white space allowed), in order, until f returns false. It
// reports whether b is an array that f accepted throughout; b must be
// valid JSON for its elements to be.
func Elements(b []byte, f func(elem []byte) bool) bool {
	i := Space(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	for i = Space(b, i+1); i < len(b) && b[i] != ']'; {
		end := Value(b, i, 0)
		if end < 0 || !f(b[i:end]) {
			return false
		}
		if i = Space(b, end); i < len(b) && b[i] == ',' {
			i = Space(b, i+1)
		}
	}
	return i < len(b)
}
