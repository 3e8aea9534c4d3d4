package main

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// validate lists the configuration's events, and refuses a bad one naming
// its key.
func TestValidateListsEvents(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := t.TempDir()
	good := writeConfig(t, dir, "env.yaml", `
harness:
  command: [`+th+`, agent]
tools:
  - {name: calc, command: [`+th+`, tools]}
events:
  - {name: follow-up, before_turn: 2, message: "also X"}
  - {after_tool: {name: "ad*", arguments: '"a":1'}, deliver: "CI failed"}
  - {after: 30s, tool: {server: calc, name: count}, once: false}
  - {response_matches: '(?i)done', file: {path: notes/a.md, content: "x"}}
`)
	out, errOut, code := harnessd(t, nil, "validate", good)
	if code != exitOK {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, want := range []string{
		good + ": event 0: follow-up: before turn 2: append a message to the next turn\n",
		good + `: event 1: after a tool call matching ad* with arguments matching "\"a\":1": deliver a message mid-turn (else with the next turn)` + "\n",
		good + ": event 2: 30s into a turn: call tool calc/count (every time)\n",
		good + `: event 3: when a response matches "(?i)done": place workspace file notes/a.md` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	bad := writeConfig(t, dir, "bad.yaml", `
harness:
  command: [`+th+`, agent]
events:
  - {name: ci, after_tool: run_ci, message: a, deliver: b}
  - {before_turn: 1, file: {path: ../../etc/passwd, content: x}}
`)
	out, errOut, code = harnessd(t, nil, "validate", bad)
	if code != exitUsage || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, want := range []string{
		bad + `: events[0] "ci": exactly one effect is allowed, not message and deliver`,
		bad + `: events[1]: file.path "../../etc/passwd" must not contain ..`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
