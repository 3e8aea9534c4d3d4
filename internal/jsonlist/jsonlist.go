// Package jsonlist reads JSON lists of untrusted input one element at a
// time, without a decoder for the elements that decode to nothing: what
// the model gateway's dialects share so that a request of many tiny
// elements ({},) costs its bytes, not a struct and a reflective decode
// each. It works on valid JSON (a body already decoded once or checked).
package jsonlist

import (
	"encoding/json"
	"errors"
	"reflect"

	"github.com/harnessd/harnessd/internal/jsonscan"
	"github.com/harnessd/harnessd/wire"
)

// Count returns the number of elements of the JSON array raw, -1 when it
// is not one.
func Count(raw []byte) int {
	n := 0
	if !jsonscan.Elements(raw, func([]byte) bool { n++; return true }) {
		return -1
	}
	return n
}

// NoField reports whether e is an object of plain keys none of which
// json.Unmarshal could match to one of the field names: it decodes to the
// zero value of a struct of those fields.
func NoField(e []byte, names ...string) bool {
	return wire.ObjectFields(e, func(k, _ []byte) bool { return !MayName(k, names...) })
}

// PlainInto sets *dst to the JSON string v when it has no escapes (and
// reports so).
func PlainInto(dst *string, v []byte) bool {
	s, ok := wire.PlainString(v)
	*dst = s
	return ok
}

// MayName reports whether json.Unmarshal might match the key k to one of
// the field names: it matches without regard to case, and to be safe '_'
// and '-' are ignored here and a non-ASCII key may match any.
func MayName(k []byte, names ...string) bool {
	var folded [24]byte
	n := 0
	for _, c := range k {
		switch {
		case c >= 0x80:
			return true
		case c == '_' || c == '-':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		if n == len(folded) {
			return false // longer than every name
		}
		folded[n] = c
		n++
	}
	for _, name := range names {
		if equalFolded(folded[:n], name) {
			return true
		}
	}
	return false
}

// equalFolded reports whether the folded key k is name in lower case
// without its '_' and '-'.
func equalFolded(k []byte, name string) bool {
	j := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c == '-' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if j == len(k) || k[j] != c {
			return false
		}
		j++
	}
	return j == len(k)
}

// Read reads the JSON array b (null: none) as json.Unmarshal decodes it
// into the slice prev (a field's list before its key, nil the first time)
// and returns the list's elements that are not the zero value of T, a
// struct of the JSON fields named fields, each with its index in b in the
// int at returns: an element none of whose keys can name one (or null) is
// the zero value, neither decoded nor kept. An element that does not
// decode is its error; b not an array the json.UnmarshalTypeError a
// decode into []T gives. A key given twice (prev not nil) is read as
// json.Unmarshal read it, over the list as it stands (Overlay): the first
// list spread to its places, every element decoded and kept.
func Read[T any](prev []T, b []byte, fields []string, at func(*T) *int) ([]T, error) {
	if prev != nil {
		return readOver(prev, b, at)
	}
	if string(b) == "null" {
		return nil, nil
	}
	var out []T
	var err error
	i := -1
	if !jsonscan.Elements(b, func(e []byte) bool {
		i++
		if string(e) == "null" || NoField(e, fields...) {
			return true
		}
		var v T
		if err = json.Unmarshal(e, &v); err != nil {
			return false
		}
		*at(&v) = i
		out = append(out, v)
		return true
	}) {
		return nil, listError[T](b, err)
	}
	if out == nil {
		out = []T{} // a list, as json.Unmarshal gives
	}
	return out, nil
}

// readOver is Read over the list prev, which Read made (its elements in
// their places, each with its index) or readOver did (every element, past
// its length too).
func readOver[T any](prev []T, b []byte, at func(*T) *int) ([]T, error) {
	if n := len(prev); n > 0 && *at(&prev[n-1]) != n-1 { // Read's, not all kept
		spread := make([]T, *at(&prev[n-1])+1)
		for _, v := range prev {
			spread[*at(&v)] = v
		}
		prev = spread
	}
	out, err := Overlay(prev, b, func(e []byte, v *T) error { return json.Unmarshal(e, v) })
	if err != nil {
		return nil, listError[T](b, err)
	}
	for i := range out {
		*at(&out[i]) = i
	}
	return out, nil
}

// listError is the error of b read as a list: err, or when b is not an
// array the json.UnmarshalTypeError a decode into []T gives.
func listError[T any](b []byte, err error) error {
	if err == nil || errors.Is(err, errNotArray) {
		return &json.UnmarshalTypeError{Value: kind(b), Type: reflect.TypeFor[[]T]()}
	}
	return err
}

// kind names the kind of the JSON value b as json.UnmarshalTypeError does.
func kind(b []byte) string {
	switch b[0] {
	case '{':
		return "object"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	}
	return "number"
}
