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

// validate refuses an event whose tool names cannot be met by the served
// catalog: a tool effect naming a tool its server does not offer, an
// after_tool pattern matching no tool, and one matching only a hidden tool
// (the harness cannot call it, so the event never fires). The control: the
// same events with names the server offers (count, hidden but callable by
// the environment; add, served) are accepted.
func TestValidateRefusesEventsNamingToolsNoServerOffers(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := t.TempDir()
	config := func(file, effectTool, pattern string) string {
		return writeConfig(t, dir, file, `
harness:
  command: [`+th+`, agent]
tools:
  - {name: calc, command: [`+th+`, tools]}
hide: [count]
events:
  - {name: tick, after: 30s, tool: {server: calc, name: `+effectTool+`}}
  - {name: ci, after_tool: {name: "`+pattern+`"}, message: "CI failed"}
`)
	}
	good := config("good.yaml", "count", "ad*")
	if out, errOut, code := harnessd(t, nil, "validate", good); code != exitOK {
		t.Fatalf("the control: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, c := range []struct{ effectTool, pattern, want string }{
		{"cuont", "ad*", `events[0] "tick".tool: tool server "calc" offers no tool "cuont" (its tools: `},
		{"count", "run_*", `events[1] "ci".after_tool: name "run_*" matches no tool the harness is served, so the event never fires (served: `},
		{"count", "count", `events[1] "ci".after_tool: name "count" matches only hidden tools (count), which the harness cannot call`},
	} {
		bad := config("bad.yaml", c.effectTool, c.pattern)
		out, errOut, code := harnessd(t, nil, "validate", bad)
		if code != exitUsage || !strings.Contains(errOut, bad+": "+c.want) {
			t.Errorf("tool %s, after_tool %s: exit %d, stdout %q, stderr lacks %q:\n%s", c.effectTool, c.pattern, code, out, c.want, errOut)
		}
	}
}

// validate refuses an expose or hide pattern that matches no tool of the
// tool servers: expose: ["nope*"] was "ok", and the harness was then
// served no tools; a misspelt hide leaves the tool it meant callable. The
// control: patterns that match (by name, by server/name) are accepted.
func TestValidateRefusesToolPatternsMatchingNothing(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := t.TempDir()
	config := func(file, expose, hide string) string {
		return writeConfig(t, dir, file, `
harness:
  command: [`+th+`, agent]
tools:
  - {name: calc, command: [`+th+`, tools]}
expose: [`+expose+`]
hide: [`+hide+`]
`)
	}
	if out, errOut, code := harnessd(t, nil, "validate", config("good.yaml", `"ad*", count`, `"calc/count"`)); code != exitOK {
		t.Fatalf("the control: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	bad := config("bad.yaml", `"nope*"`, "cuont")
	_, errOut, code := harnessd(t, nil, "validate", bad)
	for _, want := range []string{
		bad + `: expose[0]: pattern "nope*" matches no tool of the tool servers, so it serves nothing (tools: `,
		bad + `: hide[0]: pattern "cuont" matches no tool of the tool servers, so it hides nothing (tools: `,
	} {
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, errOut)
		}
	}
}

// validate says when a tool server that did not start leaves the patterns
// and the after_tool events unchecked: they were skipped in silence, and
// reported only once the server was fixed. The control: with the server
// starting, the same misspelt patterns are found.
func TestValidateSaysWhatAFailedToolServerLeavesUnchecked(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := t.TempDir()
	config := func(file, program string) string {
		return writeConfig(t, dir, file, `
harness:
  command: [`+th+`, agent]
tools:
  - {name: calc, command: [`+program+`, tools]}
hide: [nothing*]
events:
  - {name: ci, after_tool: nosuch_*, message: "CI failed"}
`)
	}
	_, errOut, code := harnessd(t, nil, "validate", config("control.yaml", th))
	if code != exitUsage || !strings.Contains(errOut, `hide[0]: pattern "nothing*" matches no tool`) || !strings.Contains(errOut, `events[0] "ci".after_tool: name "nosuch_*" matches no tool`) {
		t.Fatalf("the control: exit %d, stderr %q", code, errOut)
	}
	broken := config("broken.yaml", "/bin/false")
	_, errOut, code = harnessd(t, nil, "validate", broken)
	for _, want := range []string{
		broken + ": expose, hide: not checked against the tools: 1 tool server(s) did not start or list their tools",
		broken + `: events[0] "ci".after_tool: not checked against the tools: 1 tool server(s)`,
	} {
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, errOut)
		}
	}
}
