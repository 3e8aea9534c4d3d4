package session_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/wire"
)

// turnShape counts a turn's kept events: all of them, the egress ones and
// the bytes of their encoding.
func turnShape(t *testing.T, obs *wire.Observation) (events, egress int, bytes int64) {
	t.Helper()
	for _, e := range obs.Metadata.TurnEvents {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		bytes += int64(len(b))
		if e.Type == wire.EventEgress {
			egress++
		}
	}
	return len(obs.Metadata.TurnEvents), egress, bytes
}

// TestEgressFloodIsBoundedLikeTheHarnessOwnEvents: every request a
// sandboxed harness makes to its egress proxy becomes an egress event of
// the turn, and those came from the daemon (source daemon), which the
// turn's bounds (episode.max_turn_events, max_turn_event_bytes) let
// through whatever their number: a harness that opened N connections to a
// host no policy allows — refused at once, no network needed — made the
// daemon keep N events in the turn, the trajectory and the observation,
// each with the host it named twice (the field, and the refusal's reason
// quoting it), up to the proxy's 64 KiB header.
//
// Measured before the fix, with max_turn_events 100 and
// max_turn_event_bytes 256 KiB: 1,000 CONNECTs for a host of 4,000 letters
// kept 1,000 egress events, 8.2 MB (32× the byte bound); the control, 1,000
// error events of the harness's own, kept 101 events.
func TestEgressFloodIsBoundedLikeTheHarnessOwnEvents(t *testing.T) {
	const (
		maxEvents = 100
		maxBytes  = 256 << 10
		flood     = 1000
	)
	s := sandboxed(t, func(c *config.Config) {
		c.Network = config.NetworkConfig{Egress: config.EgressAllow, Allow: []string{"allowed.example"}}
		c.Episode.MaxTurnEvents = maxEvents
		c.Episode.MaxTurnEventBytes = maxBytes
	})
	reset(t, s)

	// Control: as many events of the harness's own are cut at the bound.
	obs := step(t, s, strings.TrimSuffix(strings.Repeat("error e;;", flood), ";;"))
	n, _, b := turnShape(t, obs)
	t.Logf("control: %d error events sent, %d kept, %d bytes", flood, n, b)
	if n > maxEvents+3 || obs.Metadata.Truncated == nil {
		t.Fatalf("control: the harness's own %d events kept %d (truncated %+v): the turn bound is not in force", flood, n, obs.Metadata.Truncated)
	}

	obs = step(t, s, "attack egress-flood 1000 4000")
	var r struct {
		Count  int    `json:"count"`
		Detail string `json:"detail"`
	}
	if obs.Metadata.Response == nil || json.Unmarshal([]byte(*obs.Metadata.Response), &r) != nil {
		t.Fatalf("not an attack result: %+v", obs.Metadata)
	}
	n, egress, b := turnShape(t, obs)
	t.Logf("attack: %s; kept %d events, %d of them egress, %d bytes", r.Detail, n, egress, b)
	if r.Count != flood {
		t.Fatalf("the flood did not run: %s", r.Detail)
	}
	if egress == 0 {
		t.Fatalf("no egress event kept: the proxy's events do not reach the turn")
	}
	if n > maxEvents+3 || b > 2*maxBytes {
		t.Errorf("%d egress connections kept %d events (%d egress) of %d bytes, over max_turn_events %d / max_turn_event_bytes %d",
			flood, n, egress, b, maxEvents, maxBytes)
	}
	if obs.Metadata.Truncated == nil {
		t.Errorf("the egress flood's turn says nothing was dropped")
	}
}
