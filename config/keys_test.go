package config

import (
	"strings"
	"testing"
)

// An unknown key names the nearest key of its own mapping when it is a
// likely misspelling, and nothing when none is near; no message names a Go
// type.
func TestUnknownKeySuggestsTheNearest(t *testing.T) {
	_, err := ParseConfig([]byte(`
harness:
  comand: [sh]
  model: {urll: "http://127.0.0.1:1"}
episode: {turn_timout: 5s, zzz: 1}
sandbox: {readonly: []}
tools:
  - {name: a, url: "http://127.0.0.1:1/mcp", header: {}}
`), t.TempDir())
	if err == nil {
		t.Fatal("misspelled keys were accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"line 3: unknown key comand (did you mean command?)",
		"line 4: unknown key urll (did you mean url?)",
		"line 5: unknown key turn_timout (did you mean turn_timeout?)",
		"line 5: unknown key zzz\n",
		"line 6: unknown key readonly (did you mean read_only?)",
		"line 8: unknown key header (did you mean headers?)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "config.") || strings.Contains(msg, "not found in type") {
		t.Errorf("the error names a Go type:\n%s", msg)
	}
}
