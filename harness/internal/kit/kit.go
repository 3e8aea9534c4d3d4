// Package kit holds small helpers shared by the harness adapters and the
// agent presets: strict decoding of an adapter's options, TOML quoting for
// agents' config files, and telling an exit before a turn's message was
// taken from a crash mid-turn (exit.go). It owns no state and starts
// nothing; what starts and stops harnesses is package adapterkit.
package kit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/internal/nearest"
)

// DecodeOptions decodes an adapter's options (harness.options, as YAML gave
// them) into dst, a pointer to a struct with json tags. Unknown keys and
// values of the wrong type are errors naming the key.
func DecodeOptions(opts map[string]any, dst any) error {
	if len(opts) == 0 {
		opts = map[string]any{}
	}
	b, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("harness.options: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return fmt.Errorf("harness.options.%s: a %s cannot be a %s", te.Field, te.Value, goTypeName(te.Type.String()))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			key, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
			return UnknownOption(key, JSONKeys(dst))
		default:
			return fmt.Errorf("harness.options%s: %w", culprit(opts, dst), err)
		}
	}
	return nil
}

// UnknownOption is the error for the harness.options key key, not one of
// known: it names the nearest known key when key looks like a misspelling
// of it, and lists them all.
func UnknownOption(key string, known []string) error {
	hint := ""
	if k := nearest.Key(key, known); k != "" {
		hint = fmt.Sprintf("did you mean %q? ", k)
	}
	return fmt.Errorf("harness.options: unknown key %q (%sknown: %s)", key, hint, strings.Join(known, ", "))
}

// JSONKeys lists the json keys of the struct dst points to, in order.
func JSONKeys(dst any) []string {
	t := reflect.TypeOf(dst).Elem()
	var keys []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// culprit names the option whose value dst's decoder rejects (".key"), or
// returns "" if no single key does.
func culprit(opts map[string]any, dst any) string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	typ := reflect.TypeOf(dst).Elem()
	for _, k := range keys {
		b, err := json.Marshal(map[string]any{k: opts[k]})
		if err != nil {
			return "." + k
		}
		if json.Unmarshal(b, reflect.New(typ).Interface()) != nil {
			return "." + k
		}
	}
	return ""
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "whole number"
	case t == "string":
		return "string"
	case t == "bool":
		return "boolean"
	case strings.HasPrefix(t, "[]"):
		return "list"
	case strings.HasPrefix(t, "map["):
		return "mapping"
	}
	return t
}

// TOMLString quotes s as a TOML basic string (for agents' config.toml).
func TOMLString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
