package integration

import (
	"fmt"
	"strings"
	"testing"
)

// userConfig is the test agent with the test double's simulated user:
// five turns, each response checked, then done.
func userConfig(t testing.TB) string {
	th := testharnessBin(t)
	return writeConfig(t, fmt.Sprintf(`
name: integ-user
harness:
  command: [%q, agent]
user:
  command: [%q, user, --turns, "5", --expect, "turn %%d"]
`, th, th))
}

// Over /ws with a real daemon, a simulated-user program plays a five-turn
// episode to done from a single reset: one step with an empty message and
// {"play": true}. A second episode is played step by step with empty
// messages, each the user's.
func TestWSSimulatedUserPlaysAnEpisodeToDone(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	d := startDaemon(t, spec{Flags: []string{"--config", userConfig(t)}})
	w := dialRaw(t, d, "/ws", nil)
	defer w.close()

	obsData(t, w.request(map[string]any{"type": "reset", "data": map[string]any{}}))
	obs := obsData(t, w.request(map[string]any{"type": "step", "data": map[string]any{"message": "", "metadata": map[string]any{"play": true}}}))
	md := meta(t, obs)
	if obs["done"] != true || md["user_done"] != true || md["turn_number"] != 5.0 || md["user_reason"] != "satisfied after 5 turns" {
		t.Fatalf("played episode: %v", obs)
	}
	if md["error_type"] != nil || md["message_source"] != "user" || responseOf(t, obs) != "turn 5" {
		t.Fatalf("played episode's last turn: %v", md)
	}
	sd := obj(t, w.request(map[string]any{"type": "state"})["data"], "state")
	if sd["step_count"] != 5.0 || sd["done"] != true {
		t.Fatalf("state after play: %v", sd)
	}

	obsData(t, w.request(map[string]any{"type": "reset", "data": map[string]any{}}))
	for n := 1; n <= 5; n++ {
		obs = obsData(t, w.request(stepFrame("")))
		if got := responseOf(t, obs); got != fmt.Sprintf("turn %d", n) {
			t.Fatalf("step %d answered %q", n, got)
		}
		if done := obs["done"] == true; done != (n == 5) {
			t.Fatalf("step %d: done %v", n, obs["done"])
		}
	}
	if e := errorData(t, w.request(stepFrame("")), "EXECUTION_ERROR"); !strings.Contains(e["message"].(string), "reset") {
		t.Fatalf("step after the user's done: %v", e)
	}
}
