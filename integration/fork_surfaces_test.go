package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
)

// TestForkSurfacesOfTheDaemon drives the fork through the real binary (its
// default isolation) with the Go client: after two turns, a fork of 3
// answers three ready siblings; each is stepped — one over an attached
// /ws connection, one over POST /step with its session_id, one after a
// POST /fork of its own — and continues at turn 3 remembering the
// parent's messages; the parent goes on; /metrics counts the fork and the
// siblings' sessions; closing a sibling's connection ends it.
func TestForkSurfacesOfTheDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--max-sessions", "6"}, Harness: agentCmd(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	parent, err := client.Dial(ctx, d.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	if _, err := parent.Reset(ctx, client.ResetOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"reply alpha", "reply beta"} {
		if _, err := parent.Step(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	sibs, err := parent.Fork(ctx, client.ForkOptions{Count: 3})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	if len(sibs) != 3 {
		t.Fatalf("%d siblings: %+v", len(sibs), sibs)
	}
	for i, s := range sibs {
		if s.Err != nil || s.SessionID == "" || s.EpisodeID == "" {
			t.Fatalf("sibling %d: %+v", i, s)
		}
	}
	const want = "history: reply alpha | reply beta | history"

	a, err := parent.AttachSibling(ctx, sibs[0])
	if err != nil {
		t.Fatal(err)
	}
	obs, err := a.Step(ctx, "history")
	if err != nil || obs.Metadata.TurnNumber != 3 || obs.Metadata.Response == nil || *obs.Metadata.Response != want {
		t.Errorf("sibling 0 over /ws: %+v %v", obs, err)
	}

	code, v := d.Do("POST", "/step", `{"session_id":"`+sibs[1].SessionID+`","action":{"message":"history"}}`, nil)
	b, _ := json.Marshal(v)
	if code != http.StatusOK || !strings.Contains(string(b), `"response":"`+want+`"`) || !strings.Contains(string(b), `"turn_number":3`) {
		t.Errorf("sibling 1 over POST /step: %d %s", code, b)
	}

	code, v = d.Do("POST", "/fork", `{"session_id":"`+sibs[2].SessionID+`","count":1}`, nil)
	reply, _ := v.(map[string]any)
	list, _ := reply["siblings"].([]any)
	if code != http.StatusOK || reply["parent_session_id"] != sibs[2].SessionID || reply["at_turn"] != 2.0 || len(list) != 1 {
		t.Fatalf("POST /fork of sibling 2: %d %v", code, v)
	}
	grand, _ := list[0].(map[string]any)
	g, err := client.Attach(ctx, d.URL, grand["session_id"].(string), nil)
	if err != nil {
		t.Fatal(err)
	}
	if obs, err := g.Step(ctx, "history"); err != nil || obs.Metadata.TurnNumber != 3 || *obs.Metadata.Response != want {
		t.Errorf("a sibling of a sibling: %+v %v", obs, err)
	}
	g.Close()

	if obs, err := parent.Step(ctx, "count"); err != nil || obs.Metadata.TurnNumber != 3 {
		t.Errorf("the parent after the forks: %+v %v", obs, err)
	}

	// A closed sibling's session ends after its slot is free: the gauges
	// follow.
	waitMetric := func(sample string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, raw := d.DoRaw("GET", "/metrics", "", nil)
			if strings.Contains(string(raw), sample+"\n") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/metrics never said %q", sample)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitMetric("harnessd_fork_seconds_count 2")
	waitMetric(`harnessd_sessions_open{kind="fork"} 3`)
	a.Close()
	waitMetric(`harnessd_sessions_open{kind="fork"} 2`)
}
