package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/internal/nearest"
)

// jsonlKeys are the keys a JSONL task may have.
var jsonlKeys = sync.OnceValue(func() []string {
	var keys []string
	for f := range reflect.TypeFor[jsonlTask]().Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
})

// describeJSONLError says what is wrong with a JSONL task line in the
// task's terms: the key and the kind of value wanted, or the unknown key
// with the nearest known one, never the Go type it was decoded into.
func describeJSONLError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("invalid JSON task: key %q: %s where %s is wanted", te.Field, article(te.Value), jsonKind(te.Type))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		msg := "invalid JSON task: unknown key " + name
		if k := nearest.Key(strings.Trim(name, `"`), jsonlKeys()); k != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", k)
		}
		return errors.New(msg)
	}
	return fmt.Errorf("invalid JSON task: %w", err)
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another kind of value"
}

// article puts "a" or "an" before the JSON value kind the decoder names
// ("number", "array", "object", "string", "bool").
func article(kind string) string {
	if strings.HasPrefix(kind, "number ") {
		kind = "number" // "number 1.5" for a fraction into an integer
	}
	switch kind {
	case "array", "object":
		return "an " + kind
	case "bool":
		return "true or false"
	}
	return "a " + kind
}
