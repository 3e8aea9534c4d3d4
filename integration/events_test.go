package integration

import (
	"fmt"
	"strings"
	"testing"
)

// TestEventQueueOverWS runs an environment with events through the real
// daemon (its default isolation: the sandbox where the host allows it)
// over /ws: an event before turn 2 joins turn 2's message, a tool call on
// the bridge delivers text mid-turn to the line-protocol agent, and a
// response places a file the sandboxed harness then finds in its
// workspace. Each shows as an env_event in the turn's events.
func TestEventQueueOverWS(t *testing.T) {
	t.Parallel()
	th := testharnessBin(t)
	cfg := writeConfig(t, fmt.Sprintf(`
name: integ-events
harness:
  command: [%q, agent]
tools:
  - name: demo
    command: [%q, tools]
episode:
  turn_timeout: 60s
events:
  - {name: follow-up, before_turn: 2, message: "the user adds: mind the empty input"}
  - {name: ci, after_tool: add, deliver: "CI failed on main"}
  - {name: review, response_matches: 'ready for review', file: {path: review/notes.md, content: "please add tests\n"}}
`, th, th))
	d := startDaemon(t, spec{Flags: []string{"--config", cfg}})
	w := dialRaw(t, d, "/ws", nil)
	obsData(t, w.request(map[string]any{"type": "reset", "data": map[string]any{}}))

	envEvents := func(md map[string]any) []map[string]any {
		var out []map[string]any
		for _, e := range md["turn_events"].([]any) {
			ev := e.(map[string]any)
			if ev["type"] == "env_event" {
				if ev["source"] != "daemon" {
					t.Fatalf("env_event from %v", ev["source"])
				}
				out = append(out, ev["data"].(map[string]any))
			}
		}
		return out
	}

	obs := obsData(t, w.request(stepFrame(`tool add {"a":2,"b":3};;waitevent 30s`)))
	md := meta(t, obs)
	if got := responseOf(t, obs); got != "add -> 5\nevent: CI failed on main" {
		t.Fatalf("turn 1: %q (%v)", got, md["error"])
	}
	if evs := envEvents(md); len(evs) != 1 || evs[0]["name"] != "ci" || evs[0]["delivery"] != "mid_turn" || evs[0]["trigger"] != "after_tool" {
		t.Fatalf("turn 1 env_events: %v", evs)
	}

	obs = obsData(t, w.request(stepFrame("history")))
	md = meta(t, obs)
	if got := responseOf(t, obs); !strings.Contains(got, "| history\n\nthe user adds: mind the empty input") {
		t.Fatalf("turn 2: %q", got)
	}
	if evs := envEvents(md); len(evs) != 1 || evs[0]["trigger"] != "before_turn" || evs[0]["delivery"] != "next_message" {
		t.Fatalf("turn 2 env_events: %v", evs)
	}

	obs = obsData(t, w.request(stepFrame("reply ready for review")))
	md = meta(t, obs)
	if evs := envEvents(md); len(evs) != 1 || evs[0]["effect"] != "file" || evs[0]["error"] != nil || evs[0]["delivery"] != "workspace" {
		t.Fatalf("turn 3 env_events: %v", evs)
	}
	// The harness, in its sandbox, finds the file in its workspace.
	obs = obsData(t, w.request(stepFrame("waitfor review/notes.md;;reply found it")))
	if got := responseOf(t, obs); got != "found it" || obs["done"] != false {
		t.Fatalf("turn 4: %q %v", got, meta(t, obs)["error"])
	}
	w.close()
}
