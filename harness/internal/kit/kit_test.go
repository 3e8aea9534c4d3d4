package kit

import (
	"strings"
	"testing"
)

func TestDecodeOptions(t *testing.T) {
	var dst struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	if err := DecodeOptions(map[string]any{"n": 3, "s": "x"}, &dst); err != nil || dst.N != 3 || dst.S != "x" {
		t.Fatalf("%+v %v", dst, err)
	}
	for opts, want := range map[string]map[string]any{
		`unknown key "m"`: {"m": 1},
		"harness.options.n: a string cannot be a whole number": {"n": "three"},
	} {
		if err := DecodeOptions(want, &dst); err == nil || !strings.Contains(err.Error(), opts) {
			t.Errorf("%v: %v, want %q", want, err, opts)
		}
	}
}
