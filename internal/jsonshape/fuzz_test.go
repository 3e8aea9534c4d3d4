package jsonshape

import (
	"bytes"
	"encoding/json"
	"testing"
)

// decode reads one JSON value with numbers kept as written (a number past
// float64's range is still JSON).
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// FuzzReplaceLoneSurrogates: on any input neither function panics; valid
// JSON stays valid JSON that decodes as Go's decoder reads the original
// (Go already takes a lone surrogate escape as U+FFFD), and the result
// has no lone surrogate left.
func FuzzReplaceLoneSurrogates(f *testing.F) {
	for _, s := range []string{`{"s":"a\ud800b"}`, `["\ud83d\ude00","\udc00"]`, `"\ud800\ud800\udc00"`, `["\ud800`, `"\\ud800"`, `[1e5,{"a":[]}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Check(b)
		out := ReplaceLoneSurrogates(b)
		if !json.Valid(b) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%q became invalid JSON %q", b, out)
		}
		x, errx := decode(b)
		y, erry := decode(out)
		if errx != nil || erry != nil {
			t.Fatalf("decode: %v, %v", errx, erry)
		}
		xb, _ := json.Marshal(x)
		yb, _ := json.Marshal(y)
		if string(xb) != string(yb) {
			t.Fatalf("%q decodes to %s, its replacement %q to %s", b, xb, out, yb)
		}
		if HasLoneSurrogate(out) {
			t.Fatalf("%q still has a lone surrogate", out)
		}
	})
}
