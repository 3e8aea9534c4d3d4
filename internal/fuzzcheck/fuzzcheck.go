// Package fuzzcheck holds the properties the fuzz targets assert of what a
// decoder produced from untrusted bytes: events that encode to valid JSON
// and decode back to the same type, and JSON documents that parse. It is
// used by tests only and owns no decoding of its own; it depends on wire
// alone so that every package's fuzz target can use it.
package fuzzcheck

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/harnessd/harnessd/wire"
)

// Emitted fails t unless e is an event a producer may emit: a valid event
// type, a source, and the properties Event checks.
func Emitted(t testing.TB, e wire.Event) {
	t.Helper()
	if !e.Type.Valid() {
		t.Fatalf("emitted an event of invalid type %q: %#v", e.Type, e)
	}
	if e.Origin == "" {
		t.Fatalf("emitted a %s event without a source", e.Type)
	}
	Event(t, e)
}

// Event fails t unless e is well formed: a payload of its type, and a JSON
// encoding that decodes back to an event of the same type and payload type.
// After that first round trip (which may canonicalize, e.g. invalid UTF-8
// into U+FFFD) the encoding is stable.
func Event(t testing.TB, e wire.Event) {
	t.Helper()
	if e.Data == nil {
		t.Fatalf("%s event without a payload", e.Type)
	}
	if e.Data.EventType() != e.Type {
		t.Fatalf("%s event with a %s payload", e.Type, e.Data.EventType())
	}
	b := roundTrip(t, e)
	b2 := roundTrip(t, decode(t, b))
	if b3 := roundTrip(t, decode(t, b2)); string(b3) != string(b2) {
		t.Fatalf("event round trip is not stable:\n %s\n %s", b2, b3)
	}
}

// roundTrip encodes e and checks that it decodes to the same event type
// and payload type; it returns the encoding.
func roundTrip(t testing.TB, e wire.Event) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("%s event does not encode: %v (%#v)", e.Type, err, e.Data)
	}
	JSON(t, "encoded event", b)
	back := decode(t, b)
	if back.Type != e.Type || reflect.TypeOf(back.Data) != reflect.TypeOf(e.Data) {
		t.Fatalf("event changed type in a round trip: %s %T -> %s %T", e.Type, e.Data, back.Type, back.Data)
	}
	return b
}

func decode(t testing.TB, b []byte) wire.Event {
	t.Helper()
	var e wire.Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("an encoded event does not decode: %v: %s", err, b)
	}
	return e
}

// JSON fails t unless b is one valid JSON document of valid UTF-8.
func JSON(t testing.TB, what string, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("%s is not valid JSON: %q", what, b)
	}
	if !utf8.Valid(b) {
		t.Fatalf("%s is not valid UTF-8: %q", what, b)
	}
}

// Encodes fails t unless v encodes to valid JSON, and returns the bytes.
func Encodes(t testing.TB, what string, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s does not encode: %v (%#v)", what, err, v)
	}
	JSON(t, what, b)
	return b
}
