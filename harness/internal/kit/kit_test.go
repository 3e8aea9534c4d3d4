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

// An unknown key names the nearest known one when it looks like a typo of
// it, and lists every known key either way.
func TestUnknownOptionSuggestsTheNearestKey(t *testing.T) {
	var dst struct {
		Prompt      string `json:"prompt"`
		SubmitDelay int    `json:"submit_delay,omitempty"`
		Hidden      int    `json:"-"`
	}
	for key, want := range map[string]string{
		"promt":       `harness.options: unknown key "promt" (did you mean "prompt"? known: prompt, submit_delay)`,
		"submitdelay": `harness.options: unknown key "submitdelay" (did you mean "submit_delay"? known: prompt, submit_delay)`,
		"colour":      `harness.options: unknown key "colour" (known: prompt, submit_delay)`,
	} {
		if err := DecodeOptions(map[string]any{key: 1}, &dst); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", key, err, want)
		}
	}
}
