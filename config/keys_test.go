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

// A value of the wrong kind names its key and what the key wants, never a
// Go type: the decoder said "line 4: cannot unmarshal !!str `three` into
// int", and an operator had to find the key by its line.
func TestAValueOfTheWrongKindNamesItsKey(t *testing.T) {
	_, err := ParseConfig([]byte(`name: x
harness:
  command: ./my-harness-with-a-long-name
  startup_timeout: 5 minutes
  env: [A=1]
episode:
  max_turns: three
  end_on_done: maybe
tools:
  - {name: a, command: [sh], per_episode: [true]}
  - name: b
    command: [sh]
    call_timeout: soon
workspace: {keep: false, template: {dir: x}}
`), t.TempDir())
	if err == nil {
		t.Fatal("values of the wrong kind were accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"line 3: harness.command: want a list (got `./my-ha...`)",
		`line 4: harness.startup_timeout: invalid duration "5 minutes"`,
		"line 5: harness.env: want a mapping (got a list)",
		"line 7: episode.max_turns: want an integer (got `three`)",
		"line 8: episode.end_on_done: want true or false (got `maybe`)",
		"line 10: tools[0].per_episode: want true or false (got a list)",
		`line 13: tools[1].call_timeout: invalid duration "soon"`,
		"line 14: workspace.template: want a string (got a mapping)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "config.") || strings.Contains(msg, "cannot unmarshal") {
		t.Errorf("the error names a Go type:\n%s", msg)
	}
	// The whole file of the wrong kind names no key.
	if _, err := ParseConfig([]byte("- a\n- b\n"), ""); err == nil || !strings.Contains(err.Error(), "line 1: want a mapping (got a list)") {
		t.Errorf("a list for a file: %v", err)
	}
}

// A bad size names its key and quotes the value as written: the message
// quoted it without its last letter ("12Z" for 12ZB), so no key matched it.
func TestABadSizeNamesItsKey(t *testing.T) {
	_, err := ParseConfig([]byte("harness:\n  command: [sh]\nepisode:\n  output_limit: 12ZB\n"), t.TempDir())
	if want := `line 4: episode.output_limit: invalid size "12ZB"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

// A 0 where 0 means the key's default, not "no limit", is a problem naming
// the key and the default: turn_timeout: 0 was taken silently for 600 s.
// The control: episode_timeout: 0 (none) and max_turns: 0 (unlimited)
// are what they say, and no problem.
func TestAZeroThatMeansTheDefaultIsAProblem(t *testing.T) {
	_, err := ParseConfig([]byte("harness:\n  command: [sh]\n  startup_timeout: 0s\nepisode:\n  turn_timeout: 0\n  output_limit: 0B\n  episode_timeout: 0\n  max_turns: 0\n"), t.TempDir())
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`line 3: harness.startup_timeout: 0 is not "no limit" here, there is always one: omit the key for the default (30s)`,
		`line 5: episode.turn_timeout: 0 is not "no limit" here, there is always one: omit the key for the default (600s)`,
		`line 6: episode.output_limit: 0 is not "no limit" here, there is always one: omit the key for the default (16MiB)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if s := err.Error(); strings.Contains(s, "episode_timeout") || strings.Contains(s, "max_turns") {
		t.Errorf("the control keys are named:\n%v", err)
	}
}
