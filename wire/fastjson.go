package wire

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// The payloads of nearly every turn (a text_output, the turn_complete, a
// daemon's error) are written here directly, without the reflective
// encoder, their MarshalJSON's second writer and the compaction encoding/json
// applies to a marshaler's output (issue 28: encoding by reflection was 15%
// of the daemon's CPU per turn). The bytes are the same as the generic
// path's (TestPayloadFastPathSameBytes); a payload with extra fields takes
// the generic path.

// payload appends p's JSON when it has a fast path and reports whether it
// did.
func (w *jsonWriter) payload(p Payload) (bool, error) {
	switch p := p.(type) {
	case *TextOutput:
		if len(p.Extra) > 0 {
			return false, nil
		}
		w.buf.WriteString(`{"text":`)
		if err := w.str(p.Text); err != nil {
			return true, err
		}
		w.buf.WriteByte('}')
	case *TurnComplete:
		if len(p.Extra) > 0 {
			return false, nil
		}
		w.buf.WriteString(`{"response":`)
		if err := w.str(p.Response); err != nil {
			return true, err
		}
		w.buf.WriteString(`,"done":`)
		w.buf.WriteString(strconv.FormatBool(p.Done))
		if p.Cancelled {
			w.buf.WriteString(`,"cancelled":true`)
		}
		w.buf.WriteByte('}')
	case *Error:
		if len(p.Extra) > 0 {
			return false, nil
		}
		w.buf.WriteString(`{"message":`)
		if err := w.str(p.Message); err != nil {
			return true, err
		}
		w.buf.WriteString(`,"recoverable":`)
		w.buf.WriteString(strconv.FormatBool(p.Recoverable))
		w.buf.WriteByte('}')
	case *LLMChunk:
		if len(p.Extra) > 0 {
			return false, nil
		}
		w.buf.WriteString(`{"content":`)
		if err := w.str(p.Content); err != nil {
			return true, err
		}
		w.buf.WriteString(`,"index":`)
		w.buf.WriteString(strconv.Itoa(p.Index))
		if p.Thought {
			w.buf.WriteString(`,"thought":true`)
		}
		if p.MessageID != "" {
			w.buf.WriteString(`,"message_id":`)
			if err := w.str(p.MessageID); err != nil {
				return true, err
			}
		}
		w.buf.WriteByte('}')
	default:
		return false, nil
	}
	return true, nil
}

// EventParts returns the "type" string and the raw "data" value of a
// harness's event object b, which must be valid JSON (json.Valid): one scan
// of its keys, no decoding. ok is false unless b is an object whose keys
// have no escapes, that names "type" (a string without escapes) and
// "data" at most once each and no case variant of them (encoding/json
// matches keys without regard to case): the caller then decodes b in full,
// which decides the same way for every b.
func EventParts(b []byte) (typ string, data []byte, ok bool) {
	var sawType bool
	ok = objectKeyValues(b, func(k, v []byte) bool {
		switch {
		case string(k) == "type":
			s, simple := simpleString(v)
			if sawType || !simple {
				return false
			}
			typ, sawType = s, true
		case string(k) == "data":
			if data != nil {
				return false
			}
			data = v
		case len(k) == 4 && (asciiFold(k, "type") || asciiFold(k, "data")):
			return false
		case !asciiOnly(k):
			return false // a non-ASCII key may fold to "type" (the Kelvin sign)
		}
		return true
	})
	return typ, data, ok
}

// decodeFast decodes the data of the two events of every turn (text_output,
// turn_complete) when it is an object of exactly their named fields with
// plain values (strings without escapes, true and false): what
// DecodeChecked's full decode would give for it, without reflection. ok is
// false for anything else, which takes the full decode. It accepts only
// valid JSON.
func decodeFast(t EventType, data []byte) (p Payload, ok bool) {
	switch t {
	case EventTextOutput:
		var out TextOutput
		seen := false
		ok = strictObject(data, func(k, v []byte) bool {
			if string(k) != "text" || seen {
				return false
			}
			out.Text, seen = simpleString(v)
			return seen
		})
		if ok && seen {
			return &out, true
		}
	case EventTurnComplete:
		var out TurnComplete
		var seen [3]bool
		ok = strictObject(data, func(k, v []byte) bool {
			var good bool
			switch string(k) {
			case "response":
				if seen[0] {
					return false
				}
				out.Response, good = simpleString(v)
				seen[0] = true
			case "done":
				if seen[1] {
					return false
				}
				out.Done, good = literalBool(v)
				seen[1] = true
			case "cancelled":
				if seen[2] {
					return false
				}
				out.Cancelled, good = literalBool(v)
				seen[2] = true
			}
			return good
		})
		if ok {
			return &out, true
		}
	}
	return nil, false
}

// objectKeyValues calls f with each key (without quotes) and raw value of
// the JSON object b, which must be valid JSON, until f returns false; it
// reports whether b was an object of plain keys that f accepted throughout.
func objectKeyValues(b []byte, f func(k, v []byte) bool) bool {
	return objectEnd(b, f) >= 0
}

// objectEnd is objectKeyValues returning the index just past the object's
// closing brace, or -1.
func objectEnd(b []byte, f func(k, v []byte) bool) int {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for i < len(b) {
		if b[i] != '"' {
			return -1
		}
		end := i + 1
		for end < len(b) && b[end] != '"' {
			if b[end] == '\\' {
				return -1
			}
			end++
		}
		if end >= len(b) {
			return -1
		}
		k := b[i+1 : end]
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		vs := skipSpace(b, i+1)
		ve := skipValue(b, vs)
		if ve < 0 || !f(k, b[vs:ve]) {
			return -1
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return -1
		}
		if b[i] == '}' {
			return i + 1
		}
		if b[i] != ',' {
			return -1
		}
		i = skipSpace(b, i+1)
	}
	return -1
}

// strictObject is objectKeyValues for bytes not known to be valid JSON: it
// accepts only objects whose values are strings or the literals true and
// false (f checks them) with nothing but space after the closing brace.
func strictObject(b []byte, f func(k, v []byte) bool) bool {
	end := objectEnd(b, func(k, v []byte) bool {
		if len(v) == 0 || (v[0] != '"' && string(v) != "true" && string(v) != "false") {
			return false
		}
		return f(k, v)
	})
	return end >= 0 && skipSpace(b, end) == len(b)
}

// simpleString returns the JSON string v ('"' ... '"') when it has no
// escapes, no control characters and is valid UTF-8: its bytes are then
// the string itself.
func simpleString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	s := v[1 : len(v)-1]
	ascii := true
	for _, c := range s {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
		if c >= 0x80 {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

func literalBool(v []byte) (bool, bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func asciiFold(k []byte, name string) bool {
	for i := range k {
		c := k[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

func asciiOnly(k []byte) bool {
	for _, c := range k {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// ObjectFields calls f with each key (without its quotes) and raw value of
// the JSON object b, in order, until f returns false. b must be valid JSON
// (json.Valid). It reports whether b is an object whose keys have no
// escapes and f accepted every field; a caller that needs the exact
// meaning of anything else decodes b in full.
func ObjectFields(b []byte, f func(key, value []byte) bool) bool {
	return objectKeyValues(b, f)
}

// PlainString returns the JSON string value v when it has no escapes and
// is valid UTF-8 (its bytes are then the string); false otherwise.
func PlainString(v []byte) (string, bool) { return simpleString(v) }

// DecodedValues counts the values of the JSON text b that decoding makes a Go
// value of whatever their size: its objects and arrays ('{' and '['
// outside strings) and every element of an array, a scalar too. Decoding
// makes at least a map, a slice or a struct of each object and array
// (`{},` is 3 bytes), and an element of its slice's type of each array
// element, whatever it is (a decoder goes on past an element of the wrong
// kind): `0,` into a slice of structs cost 250 to 1,000 times its size.
// It is what a door charges for decoding a body besides its bytes. b need
// not be valid; the scan jumps from quote to quote inside strings.
func DecodedValues(b []byte) int {
	n := 0
	// arrays has a bit per open container, set for an array (one word
	// on the stack for the first 64 levels).
	var small [1]uint64
	arrays := small[:]
	depth := 0
	next := false // a value starts next, in an array
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			n++
			if depth/64 >= len(arrays) {
				arrays = append(arrays, 0)
			}
			bit := uint64(1) << (depth % 64)
			if c == '[' {
				arrays[depth/64] |= bit
			} else {
				arrays[depth/64] &^= bit
			}
			depth++
			next = c == '['
			continue
		case '}', ']':
			if depth > 0 {
				depth--
			}
			next = false
			continue
		case ',':
			next = depth > 0 && arrays[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			continue
		case '"':
			i = closingQuote(b, i+1)
		}
		if next {
			n++ // a scalar element of an array
		}
		next = false
	}
	return n
}

// closingQuote is the index of the quote that ends the string whose
// content starts at b[i] (one not escaped by an odd run of backslashes),
// or len(b) when it does not end.
func closingQuote(b []byte, i int) int {
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		j += i
		k := j
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j
		}
		i = j + 1
	}
}
