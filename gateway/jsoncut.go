package gateway

import (
	"bytes"
	"errors"

	"github.com/harnessd/harnessd/internal/jsonscan"
)

// cutMember removes the top-level member named key from the JSON object
// raw, returning the member's value and the object without it. It lets the
// engine's bulky prompt_token_ids be read by a reflection-free parser while
// encoding/json reads the rest. ok is false when the member is absent; an
// error means raw is not a well-formed object as far as the walk can tell
// (the caller decodes the rest with encoding/json, which checks it fully).
// A list value of the member is taken to its first closing bracket: the
// end of a list of numbers, which is what the caller parses (a list of
// anything else then fails that parse).
func cutMember(raw []byte, key string) (value, rest []byte, ok bool, err error) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, raw, false, errors.New("not a JSON object")
	}
	i++
	prevComma := -1
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return nil, raw, false, errors.New("unterminated object")
		}
		if raw[i] == '}' {
			return nil, raw, false, nil
		}
		if raw[i] != '"' {
			return nil, raw, false, errors.New("object key is not a string")
		}
		keyStart := i
		if i, err = skipString(raw, i); err != nil {
			return nil, raw, false, err
		}
		name := raw[keyStart+1 : i-1]
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] != ':' {
			return nil, raw, false, errors.New("object key without a value")
		}
		valStart := skipSpace(raw, i+1)
		valEnd, err := 0, error(nil)
		if string(name) == key && valStart < len(raw) && raw[valStart] == '[' {
			if valEnd = bytes.IndexByte(raw[valStart:], ']') + 1; valEnd == 0 {
				return nil, raw, false, errors.New("unterminated list")
			}
			valEnd += valStart
		} else if valEnd, err = skipValue(raw, valStart); err != nil {
			return nil, raw, false, err
		}
		next := skipSpace(raw, valEnd)
		if string(name) == key {
			from, to := keyStart, next
			switch {
			case next < len(raw) && raw[next] == ',':
				to = next + 1
			case prevComma >= 0:
				from = prevComma
			}
			out := make([]byte, 0, len(raw)-(to-from))
			out = append(append(out, raw[:from]...), raw[to:]...)
			return raw[valStart:valEnd], out, true, nil
		}
		if next >= len(raw) {
			return nil, raw, false, errors.New("unterminated object")
		}
		switch raw[next] {
		case ',':
			prevComma, i = next, next+1
		case '}':
			return nil, raw, false, nil
		default:
			return nil, raw, false, errors.New("malformed object")
		}
	}
}

func skipSpace(b []byte, i int) int { return jsonscan.Space(b, i) }

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, error) {
	if j := jsonscan.String(b, i); j >= 0 {
		return j, nil
	}
	return 0, errors.New("unterminated string")
}

// skipValue returns the index after the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if j := jsonscan.Value(b, i, 0); j >= 0 {
		return j, nil
	}
	switch {
	case i >= len(b) || !(b[i] == '"' || b[i] == '{' || b[i] == '['):
		return 0, errors.New("missing value")
	case b[i] == '"':
		return 0, errors.New("unterminated string")
	}
	return 0, errors.New("unterminated value")
}
