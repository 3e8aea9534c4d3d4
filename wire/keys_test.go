package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestObjectKeys(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		ok   bool
	}{
		{`{}`, nil, true},
		{` { "a" : 1 , "b":"x}\"{" ,"c":{"d":[1,{"e":"]"}]},"f":null,"g":true,"h":-1.5e3 } `, []string{"a", "b", "c", "f", "g", "h"}, true},
		{`{"a":[],"b":{}}`, []string{"a", "b"}, true},
		{`{"\u0061":1}`, nil, false}, // an escaped key: the caller decodes instead
		{`[1]`, nil, false},
	}
	for _, c := range cases {
		if !json.Valid([]byte(c.in)) {
			t.Fatalf("bad case %s", c.in)
		}
		var got []string
		ok := objectKeys([]byte(c.in), func(k []byte) bool { got = append(got, string(k)); return true })
		if ok != c.ok || (ok && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("%s: got %v %v, want %v %v", c.in, got, ok, c.want, c.ok)
		}
	}
	// Stopping early.
	n := 0
	objectKeys([]byte(`{"a":1,"b":2,"c":3}`), func([]byte) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("stopped after %d keys, want 2", n)
	}
}

// FuzzObjectKeys: on any valid JSON object the scanner finds exactly the
// keys a full decode finds (or says it cannot tell).
func FuzzObjectKeys(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,"}"]},"c":"\\"}`, `{"x":"y","x":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &m) != nil || m == nil {
			return
		}
		seen := map[string]bool{}
		if !objectKeys([]byte(s), func(k []byte) bool { seen[string(k)] = true; return true }) {
			return
		}
		if len(seen) != len(m) {
			t.Fatalf("%s: scanned %v, decoded %d keys", s, seen, len(m))
		}
		for k := range m {
			if !seen[k] {
				t.Fatalf("%s: key %q not scanned", s, k)
			}
		}
	})
}
