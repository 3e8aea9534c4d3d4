package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// Each payload type encodes its named fields through encoding/json and
// splices its Extra after them; decoding keeps the keys it does not name in
// Extra. The local "plain" types drop the methods to avoid recursion.

// MarshalJSON writes the payload's fields, then its extra ones.
func (p TextOutput) MarshalJSON() ([]byte, error) {
	type plain TextOutput
	return marshalExtra(plain(p), p.Extra)
}

// UnmarshalJSON reads the payload, keeping unnamed fields in Extra.
func (p *TextOutput) UnmarshalJSON(b []byte) error {
	type plain TextOutput
	return unmarshalExtra(b, (*plain)(p), &p.Extra)
}

// MarshalJSON writes the payload's fields, then its extra ones; absent
// (or null) arguments are written as {}.
func (p ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall
	if len(p.Arguments) == 0 || string(p.Arguments) == "null" {
		p.Arguments = emptyObject
	}
	return marshalExtra(plain(p), p.Extra)
}

// UnmarshalJSON reads the payload, keeping unnamed fields in Extra.
func (p *ToolCall) UnmarshalJSON(b []byte) error {
	type plain ToolCall
	return unmarshalExtra(b, (*plain)(p), &p.Extra)
}

// MarshalJSON writes the payload's fields, then its extra ones.
func (p ToolResult) MarshalJSON() ([]byte, error) {
	type plain ToolResult
	return marshalExtra(plain(p), p.Extra)
}

// UnmarshalJSON reads the payload, keeping unnamed fields in Extra. Result
// and StructuredContent are decoded into Go values up to PlainLimit bytes
// each and kept as raw JSON beyond (plainField).
func (p *ToolResult) UnmarshalJSON(b []byte) error {
	type plain ToolResult
	var s struct {
		*plain
		Result            json.RawMessage `json:"result"`
		StructuredContent json.RawMessage `json:"structured_content"`
	}
	s.plain = (*plain)(p)
	if err := unmarshalExtraAs(b, &s, reflect.TypeOf(s.plain).Elem(), &p.Extra); err != nil {
		return err
	}
	var err error
	if p.Result, err = plainField("result", s.Result); err != nil {
		return err
	}
	p.StructuredContent, err = plainField("structured_content", s.StructuredContent)
	return err
}

// MarshalJSON writes the payload's fields, then its extra ones.
func (p LLMRequest) MarshalJSON() ([]byte, error) {
	type plain LLMRequest
	return marshalExtra(plain(p), p.Extra)
}

// UnmarshalJSON reads the payload, keeping unnamed fields in Extra.
func (p *LLMRequest) UnmarshalJSON(b []byte) error {
	type plain LLMRequest
	return unmarshalExtra(b, (*plain)(p), &p.Extra)
}

// MarshalJSON writes the payload's fields, then its extra ones.
func (p LLMResponse) MarshalJSON() ([]byte, error) {
	type plain LLMResponse
	return marshalExtra(plain(p), p.Extra)
}

// UnmarshalJSON reads the payload, keeping unnamed fields in Extra. Content
// is decoded into Go values up to PlainLimit bytes and kept as raw JSON
// beyond (plainField).
func (p *LLMResponse) UnmarshalJSON(b []byte) error {
	type plain LLMResponse
	var s struct {
		*plain
		Content json.RawMessage `json:"content"`
	}
	s.plain = (*plain)(p)
	if err := unmarshalExtraAs(b, &s, reflect.TypeOf(s.plain).Elem(), &p.Extra); err != nil {
		return err
	}
	var err error
	p.Content, err = plainField("content", s.Content)
	return err
}

// MarshalJSON writes the payload's fields, then its extra ones.
func (p LLMChunk) MarshalJSON() ([]byte, error) {
	type plain LLMChunk
	return marshalExtra(plain(p), p.Extra)
}

// UnmarshalJSON reads the payload, keeping unnamed fields in Extra.
func (p *LLMChunk) UnmarshalJSON(b []byte) error {
	type plain LLMChunk
	return unmarshalExtra(b, (*plain)(p), &p.Extra)
}

// MarshalJSON writes the payload's fields, then its extra ones.
func (p Error) MarshalJSON() ([]byte, error) {
	type plain Error
	return marshalExtra(plain(p), p.Extra)
}

// UnmarshalJSON reads the payload, keeping unnamed fields in Extra.
func (p *Error) UnmarshalJSON(b []byte) error {
	type plain Error
	return unmarshalExtra(b, (*plain)(p), &p.Extra)
}

// MarshalJSON writes the payload's fields, then its extra ones.
func (p TurnComplete) MarshalJSON() ([]byte, error) {
	type plain TurnComplete
	return marshalExtra(plain(p), p.Extra)
}

// UnmarshalJSON reads the payload, keeping unnamed fields in Extra.
func (p *TurnComplete) UnmarshalJSON(b []byte) error {
	type plain TurnComplete
	return unmarshalExtra(b, (*plain)(p), &p.Extra)
}

// MarshalJSON writes the data object as it came ({} when empty).
func (u Unknown) MarshalJSON() ([]byte, error) {
	if len(u.Raw) == 0 {
		return []byte("{}"), nil
	}
	return u.Raw, nil
}

// UnmarshalJSON keeps the data object as it is; it must be an object.
func (u *Unknown) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	u.Raw = bytes.Clone(b)
	return nil
}

var emptyObject = json.RawMessage("{}")

// MaxExtraKeys bounds the fields of its own an event may carry beyond its
// schema's (Extra): each costs a map entry whatever its size on the line,
// so {"k1":0,"k2":0,...} was kept at 27 times its size, with the event.
const MaxExtraKeys = 256

var errTooManyExtraKeys = fmt.Errorf("more than %d fields beyond the event's schema", MaxExtraKeys)

// marshalExtra encodes v (a struct without methods) and appends the keys
// of extra that v's type does not name, in sorted order.
func marshalExtra(v any, extra Extra) ([]byte, error) {
	b, err := MarshalNoEscape(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	known := fieldNames(reflect.TypeOf(v))
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !known[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b, nil
	}
	sort.Strings(keys)
	out := bytes.NewBuffer(make([]byte, 0, len(b)+32*len(keys)))
	out.Write(b[:len(b)-1]) // without the closing brace
	empty := len(b) == 2
	for _, k := range keys {
		vb, err := MarshalNoEscape(extra[k])
		if err != nil {
			return nil, err
		}
		if !empty {
			out.WriteByte(',')
		}
		empty = false
		kb, _ := MarshalNoEscape(k)
		out.Write(kb)
		out.WriteByte(':')
		out.Write(vb)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// unmarshalExtra decodes b into v (a pointer to a struct without methods)
// and keeps the keys v's type does not name in *extra.
func unmarshalExtra(b []byte, v any, extra *Extra) error {
	return unmarshalExtraAs(b, v, reflect.TypeOf(v).Elem(), extra)
}

// unmarshalExtraAs is unmarshalExtra for a v whose fields are those of
// the struct type named (v may embed it and shadow some of its fields).
func unmarshalExtraAs(b []byte, v any, named reflect.Type, extra *Extra) error {
	if err := json.Unmarshal(b, v); err != nil {
		// A field of the embedded struct is named as the payload's own.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			te.Field = strings.TrimPrefix(te.Field, "plain.")
		}
		return err
	}
	known := fieldNames(named)
	*extra = nil
	unknown := 0
	scanned := objectKeys(b, func(k []byte) bool {
		if !known[string(k)] {
			unknown++
		}
		return unknown <= MaxExtraKeys
	})
	switch {
	case unknown > MaxExtraKeys:
		return errTooManyExtraKeys
	case scanned && unknown == 0:
		return nil
	}
	// Unknown keys, or escaped ones (told by decoding).
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	if len(all) > MaxExtraKeys+len(known) {
		return errTooManyExtraKeys
	}
	for k, raw := range all {
		if known[k] {
			continue
		}
		if *extra == nil {
			*extra = Extra{}
		}
		(*extra)[k] = raw
	}
	return nil
}

var fieldNameCache sync.Map // reflect.Type -> map[string]bool

// fieldNames returns the JSON names of t's fields.
func fieldNames(t reflect.Type) map[string]bool {
	if m, ok := fieldNameCache.Load(t); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	for _, f := range Fields(t) {
		m[f.Name] = true
	}
	fieldNameCache.Store(t, m)
	return m
}

// Field describes one field of a payload's schema.
type Field struct {
	// Name is the JSON key.
	Name string
	// Required says an event from a harness must carry it (harnessd rejects
	// one without it); other fields are optional or have a default.
	Required bool
	// Type is the field's Go type.
	Type reflect.Type
}

// Fields returns the schema fields of a payload struct type, in order.
func Fields(t reflect.Type) []Field {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, Field{Name: name, Required: f.Tag.Get("wire") == "required", Type: f.Type})
	}
	return out
}

// MarshalNoEscape encodes v without escaping <, > and &, so that responses
// and tool output read naturally in logs and trajectories.
func MarshalNoEscape(v any) ([]byte, error) {
	w := getWriter()
	defer putWriter(w)
	if err := w.value(v); err != nil {
		return nil, err
	}
	return bytes.Clone(w.buf.Bytes()), nil
}

// RawJSON returns v's JSON as MarshalNoEscape writes it, for a payload's
// json.RawMessage fields built from decoded values; nil when v is nil or
// cannot be encoded (a field that is then written as its default).
func RawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := MarshalNoEscape(v)
	if err != nil {
		return nil
	}
	return b
}

// SetExtra sets the extra field key of p to v (p's type must not name key:
// a named field always wins on the wire). It does nothing for *Unknown.
func SetExtra(p Payload, key string, v any) {
	var x *Extra
	switch p := p.(type) {
	case *TextOutput:
		x = &p.Extra
	case *ToolCall:
		x = &p.Extra
	case *ToolResult:
		x = &p.Extra
	case *LLMRequest:
		x = &p.Extra
	case *LLMResponse:
		x = &p.Extra
	case *LLMChunk:
		x = &p.Extra
	case *Error:
		x = &p.Extra
	case *TurnComplete:
		x = &p.Extra
	default:
		return
	}
	if *x == nil {
		*x = Extra{}
	}
	(*x)[key] = v
}
