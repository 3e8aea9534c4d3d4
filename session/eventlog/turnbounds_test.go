package eventlog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/wire"
)

func newTestLog(events int, bytes int64) *Log {
	l := &Log{}
	l.SetLimits(config.EpisodeConfig{MaxTurnEvents: events, MaxTurnEventBytes: 0})
	if bytes > 0 {
		l.limits.bytes = bytes
	}
	return l
}

func TestEventLogCoalescesAdjacentText(t *testing.T) {
	l := newTestLog(100, 1<<20)
	var streamed int
	l.BeginTurn(1, func(wire.Event) { streamed++ })
	l.Add(wire.Text(wire.OriginHarness, "a"))
	l.Add(wire.Text(wire.OriginHarness, "b"))
	l.Add(wire.Text(wire.OriginBridge, "c"))
	l.Add(wire.New(wire.OriginHarness, &wire.ToolCall{ToolName: "x"}))
	l.Add(wire.Text(wire.OriginHarness, "d"))
	l.Add(wire.New(wire.OriginHarness, &wire.TextOutput{Text: "e", Extra: wire.Extra{"k": json.RawMessage(`1`)}}))
	l.Add(wire.Text(wire.OriginHarness, "f"))
	l.Add(wire.Text(wire.OriginHarness, "g"))
	evs := l.EndTurn()
	var got []string
	for _, e := range evs {
		if to, ok := e.Data.(*wire.TextOutput); ok {
			got = append(got, string(e.Origin)+":"+to.Text)
		} else {
			got = append(got, string(e.Type))
		}
	}
	want := "harness:a\nb|bridge:c|tool_call|harness:d|harness:e|harness:f\ng"
	if s := strings.Join(got, "|"); s != want {
		t.Fatalf("kept %q, want %q", s, want)
	}
	if streamed != 8 {
		t.Errorf("streamed %d events, want all 8 as they happened", streamed)
	}
	if tr := l.Truncation(); tr != nil {
		t.Errorf("truncation %+v for a turn within bounds", tr)
	}
	if traj, _ := l.Trajectory(); len(traj) != len(evs) {
		t.Errorf("trajectory holds %d events, the turn kept %d", len(traj), len(evs))
	}
}

func TestEventLogCoalescedRunIsBounded(t *testing.T) {
	l := newTestLog(1000, 64<<20)
	l.BeginTurn(1, nil)
	line := strings.Repeat("x", 1000)
	for range 200 {
		l.Add(wire.Text(wire.OriginHarness, line))
	}
	evs := l.EndTurn()
	total := 0
	for _, e := range evs {
		n := len(e.Data.(*wire.TextOutput).Text)
		if n > coalesceTextBytes {
			t.Fatalf("a coalesced event holds %d bytes, more than %d", n, coalesceTextBytes)
		}
		total += n
	}
	if want := 200*1000 + 200 - len(evs); total != want {
		t.Errorf("coalesced text totals %d bytes, want %d (no line lost)", total, want)
	}
	if len(evs) < 3 || len(evs) > 5 {
		t.Errorf("200 KB of lines became %d events, want about 200000/64K", len(evs))
	}
}

func TestEventLogEventCap(t *testing.T) {
	l := newTestLog(10, 64<<20)
	var streamed []wire.Event
	l.BeginTurn(1, func(e wire.Event) { streamed = append(streamed, e) })
	for range 25 {
		l.Add(wire.New(wire.OriginHarness, &wire.ToolCall{ToolName: "t"}))
	}
	l.Add(wire.New(wire.OriginHarness, &wire.TurnComplete{Response: "r"}))
	evs := l.EndTurn()
	tr := l.Truncation()
	if tr == nil || tr.EventsDropped != 15 || tr.Reason != wire.TruncatedMaxEvents || tr.BytesDropped <= 0 {
		t.Fatalf("truncation %+v, want 15 events dropped by max_turn_events", tr)
	}
	// 10 kept, the daemon's notice, the turn's end.
	if len(evs) != 12 {
		t.Fatalf("kept %d events, want 12", len(evs))
	}
	if n, ok := evs[10].Data.(*wire.Error); !ok || !n.Recoverable || evs[10].Origin != wire.OriginDaemon ||
		!strings.Contains(n.Message, "max_turn_events (10)") {
		t.Errorf("event 10 is %v %+v, want the daemon's recoverable notice", evs[10], evs[10].Data)
	}
	if evs[11].Type != wire.EventTurnComplete {
		t.Errorf("last event is %s, want turn_complete", evs[11].Type)
	}
	if len(streamed) != 12 {
		t.Errorf("streamed %d events, want the 12 kept", len(streamed))
	}
	l.BeginTurn(2, nil)
	l.Add(wire.Text(wire.OriginHarness, "next"))
	l.EndTurn()
	if tr := l.Truncation(); tr != nil {
		t.Errorf("the next turn inherited truncation %+v", tr)
	}
}

func TestEventLogByteCap(t *testing.T) {
	l := newTestLog(1000, 10_000)
	l.BeginTurn(1, nil)
	line := strings.Repeat("y", 99)
	for range 1000 {
		l.Add(wire.Text(wire.OriginHarness, line))
	}
	evs := l.EndTurn()
	tr := l.Truncation()
	if tr == nil || tr.Reason != wire.TruncatedMaxBytes {
		t.Fatalf("truncation %+v, want max_turn_event_bytes", tr)
	}
	var kept int64
	for _, e := range evs {
		b, _ := wire.MarshalNoEscape(e)
		kept += int64(len(b))
	}
	if kept > 10_000+1024 {
		t.Errorf("kept %d encoded bytes, bound 10000", kept)
	}
	if tr.EventsDropped < 850 || tr.BytesDropped < 85_000 {
		t.Errorf("dropped %d events / %d bytes, want about 900 / 90000", tr.EventsDropped, tr.BytesDropped)
	}
}

func TestEventLogPendingBounded(t *testing.T) {
	l := newTestLog(5, 64<<20)
	for range 20 {
		l.Add(wire.New(wire.OriginBridge, &wire.ToolCall{ToolName: "late"}))
	}
	if n := len(l.pending.events); n != 5 {
		t.Fatalf("%d events pending between turns, bound 5", n)
	}
	l.BeginTurn(1, nil)
	l.Add(wire.New(wire.OriginHarness, &wire.TurnComplete{}))
	evs := l.EndTurn()
	tr := l.Truncation()
	if tr == nil || tr.EventsDropped != 15 {
		t.Fatalf("truncation %+v, want the 15 dropped between turns", tr)
	}
	if len(evs) != 7 {
		t.Errorf("kept %d events, want 5, the notice and the end", len(evs))
	}
}

func TestJSONStringLen(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\"back\\slash", "nl\n\t\r", "\x00\x1f", "é✓🙂", "bad\xffutf8", "\u2028"} {
		b, _ := wire.MarshalNoEscape(s)
		if got := jsonStringLen(s); got != int64(len(b)) {
			t.Errorf("jsonStringLen(%q) = %d, encoding has %d", s, got, len(b))
		}
	}
}
