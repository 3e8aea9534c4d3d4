package wire

import (
	"bytes"
	"encoding/json"
	"errors"
)

// PlainLimit is the most raw JSON that Plain decodes into Go values. Decoded
// into an any, JSON of the worst shape ([0,0,...]: a slice element and its
// growth per two bytes) costs about 40 times its size: a harness's 4 MiB
// line of zeros made 170 MiB of values, kept as long as its event. A larger
// value is kept as raw JSON, which encodes to the same document.
const PlainLimit = 64 << 10

// PlainBudget is how many bytes of raw JSON may still be decoded into Go
// values: a producer decoding many values of one untrusted line (the keys
// of an object) shares one budget between them.
type PlainBudget int

// Plain is PlainBudget.Decode with a budget of PlainLimit for this value.
func Plain(raw []byte) any {
	b := PlainBudget(PlainLimit)
	return b.Decode(raw)
}

// Decode returns the JSON value raw as plain Go values (what json.Unmarshal
// into an any gives: map[string]any, []any, float64, string, bool) while
// the budget allows, taking raw's length from it; a larger value, an array
// or object, is a json.RawMessage copy of raw instead (validated, not
// decoded). A string is always decoded (its cost is its length). Empty
// input, null and invalid JSON give nil.
func (b *PlainBudget) Decode(raw []byte) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if len(raw) <= int(*b) || raw[0] == '"' {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return nil
		}
		if raw[0] != '"' {
			*b -= PlainBudget(len(raw))
		}
		return v
	}
	if !json.Valid(raw) {
		return nil
	}
	return json.RawMessage(bytes.Clone(raw))
}

// plainField is Plain for the field name of a payload that encoding/json
// has already validated and copied: raw is kept as it is when it is too
// large. A value within PlainLimit is decoded as the payload's own field of
// type any was, with the same error (a number beyond float64).
func plainField(name string, raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if len(raw) > PlainLimit && raw[0] != '"' {
		return raw, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			te.Field = name
		}
		return nil, err
	}
	return v, nil
}
