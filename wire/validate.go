package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/harnessd/harnessd/internal/jsonshape"
)

// Validate checks that p carries what its event type requires, for events
// that come from outside harnessd (a harness's own events): every required
// field present, arguments an object. It names the first missing field.
// raw is the data object as received, so that a present-but-empty field can
// be told from an absent one; nil skips that distinction.
func Validate(p Payload, raw json.RawMessage) error {
	if _, ok := p.(*Unknown); ok {
		return fmt.Errorf("unknown event type %q", p.EventType())
	}
	if raw != nil {
		if missing, err := missingRequired(p, raw); err != nil {
			return err
		} else if missing != "" {
			return fmt.Errorf("%s data has no %q", p.EventType(), missing)
		}
	}
	if tc, ok := p.(*ToolCall); ok {
		if tc.ToolName == "" {
			return fmt.Errorf("tool_call data has an empty %q", "tool_name")
		}
		if a := bytes.TrimSpace(tc.Arguments); len(a) > 0 && a[0] != '{' && !bytes.Equal(a, []byte("null")) {
			return fmt.Errorf("tool_call %q must be a JSON object", "arguments")
		}
	}
	if tr, ok := p.(*ToolResult); ok && tr.ToolName == "" {
		return fmt.Errorf("tool_result data has an empty %q", "tool_name")
	}
	return nil
}

// DecodeChecked decodes the data of an event that came from outside
// harnessd (absent or null data is an empty object) and validates it: the
// data must be an object, every field of the right JSON type, every required
// field present, nested no deeper than jsonshape.MaxDepth, no number longer
// than jsonshape.MaxNumberLen; lone surrogate escapes become \ufffd. Its
// errors name the offending field.
func DecodeChecked(t EventType, data json.RawMessage) (Payload, error) {
	// What a trainer's decoder could not take never goes on (jsonshape).
	if err := jsonshape.Check(data); err != nil {
		return nil, fmt.Errorf("%s data: %w (a trainer's decoder fails on it)", t, err)
	}
	data = jsonshape.ReplaceLoneSurrogates(data)
	if d := bytes.TrimSpace(data); len(d) == 0 || bytes.Equal(d, []byte("null")) {
		data = emptyObject
	} else if d[0] != '{' {
		return nil, fmt.Errorf("%s data must be a JSON object", t)
	} else if p, ok := decodeFast(t, d); ok {
		return p, nil // every required field present (decodeFast)
	}
	p, err := DecodePayload(t, data)
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" && te.Type != nil {
			return nil, fmt.Errorf("%s %q must be %s, got %s", t, te.Field, jsonKind(te.Type), te.Value)
		}
		return nil, fmt.Errorf("%s data: %w", t, err)
	}
	if err := Validate(p, data); err != nil {
		return nil, err
	}
	return p, nil
}

// jsonKind names the JSON type of a Go type the way docs/protocol.md does.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return t.String()
}

// missingRequired returns the first required field of p's type that the data
// object raw does not have ("" when none is missing).
func missingRequired(p Payload, raw json.RawMessage) (string, error) {
	required := requiredFields(reflect.TypeOf(p))
	if len(required) == 0 {
		return "", nil
	}
	seen := make([]bool, len(required))
	if !objectKeys(raw, func(k []byte) bool {
		for i, name := range required {
			if string(k) == name {
				seen[i] = true
			}
		}
		return true
	}) {
		var present map[string]json.RawMessage
		if err := json.Unmarshal(raw, &present); err != nil {
			return "", fmt.Errorf("data is not a JSON object")
		}
		for i, name := range required {
			_, seen[i] = present[name]
		}
	}
	for i, name := range required {
		if !seen[i] {
			return name, nil
		}
	}
	return "", nil
}

var requiredCache sync.Map // reflect.Type -> []string

// requiredFields returns the names of t's required fields, computed once.
func requiredFields(t reflect.Type) []string {
	if v, ok := requiredCache.Load(t); ok {
		return v.([]string)
	}
	var names []string
	for _, f := range Fields(t) {
		if f.Required {
			names = append(names, f.Name)
		}
	}
	requiredCache.Store(t, names)
	return names
}
