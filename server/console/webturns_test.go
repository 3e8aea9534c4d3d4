package console

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/harnessd/harnessd/wire"
)

// logTurns plays a reset and turns turns through l, each with a message
// ("m<N>") and an observation of that turn, and returns the trajectory of
// one event per turn that records merges in.
func logTurns(l *webLog, turns int) []wire.Event {
	l.began(wire.Record{Kind: wire.RecordReset, EpisodeID: "ep"}, &wire.Observation{})
	var traj []wire.Event
	for n := 1; n <= turns; n++ {
		text := fmt.Sprintf("m%d", n)
		l.starting(wire.Record{Kind: wire.RecordMessage, Time: float64(n), Turn: n, Content: &text})
		resp := fmt.Sprintf("r%d", n)
		l.stepped(&wire.Observation{Metadata: wire.Metadata{TurnNumber: n, Response: &resp,
			TurnEvents: []wire.Event{{Type: "text_output"}}}})
		traj = append(traj, wire.Event{Type: "text_output", Turn: n})
	}
	return traj
}

// checkTurnRecords checks that recs are, per turn from first to last, its
// message, its event and its observation (without turn events).
func checkTurnRecords(t *testing.T, recs []wire.Record, first, last int) {
	t.Helper()
	if len(recs) != 3*(last-first+1) {
		t.Fatalf("%d records for turns %d..%d, want %d", len(recs), first, last, 3*(last-first+1))
	}
	for i, n := 0, first; n <= last; i, n = i+3, n+1 {
		m, e, o := recs[i], recs[i+1], recs[i+2]
		if m.Kind != wire.RecordMessage || m.Turn != n || m.Content == nil || *m.Content != fmt.Sprintf("m%d", n) {
			t.Fatalf("turn %d: message record %+v", n, m)
		}
		if e.Kind != wire.RecordEvent || e.Event.Turn != n {
			t.Fatalf("turn %d: event record %+v", n, e)
		}
		if o.Kind != wire.RecordObservation || o.Turn != n || *o.Observation.Metadata.Response != fmt.Sprintf("r%d", n) {
			t.Fatalf("turn %d: observation record %+v", n, o)
		}
		if o.Observation.Metadata.TurnEvents != nil {
			t.Fatalf("turn %d: the observation kept its turn events", n)
		}
	}
}

// TestWebLogRecordsInOrder checks the live episode's records in record-file
// order: the reset, its observation, then each turn's message, events and
// observation.
func TestWebLogRecordsInOrder(t *testing.T) {
	var l webLog
	traj := logTurns(&l, 5)
	recs, _ := l.records(traj)
	if len(recs) != 2+3*5 || recs[0].Kind != wire.RecordReset || recs[1].Kind != wire.RecordObservation || recs[1].Turn != 0 {
		t.Fatalf("records start %+v", recs[:2])
	}
	checkTurnRecords(t, recs[2:], 1, 5)
}

// TestWebLogWindowRolls checks that past maxWebTurns turns the window keeps
// the latest maxWebTurns whole turns, in order, the reset's observation
// dropped first; and that the next episode starts empty in the same memory.
func TestWebLogWindowRolls(t *testing.T) {
	var l webLog
	const turns = maxWebTurns + 37
	traj := logTurns(&l, turns)
	// The trajectory's window lines up with the console's.
	recs, _ := l.records(traj[turns-maxWebTurns:])
	if recs[0].Kind != wire.RecordReset {
		t.Fatalf("first record %+v, want the reset", recs[0])
	}
	checkTurnRecords(t, recs[1:], turns-maxWebTurns+1, turns)

	before := cap(l.turns.turns)
	traj = logTurns(&l, 3)
	recs, _ = l.records(traj)
	if len(recs) != 2+3*3 {
		t.Fatalf("the next episode has %d records, want %d", len(recs), 2+3*3)
	}
	checkTurnRecords(t, recs[2:], 1, 3)
	if cap(l.turns.turns) != before {
		t.Errorf("the next episode's window has capacity %d, want the same memory (%d)", cap(l.turns.turns), before)
	}
}

// TestWebLogWindowBoundsBytes checks that turns of large responses are
// kept within maxWebBytes, the oldest dropped first and counted, and that
// the dropped turns' events are left out of the records with them.
func TestWebLogWindowBoundsBytes(t *testing.T) {
	var l webLog
	l.began(wire.Record{Kind: wire.RecordReset, EpisodeID: "ep"}, &wire.Observation{})
	const turns, size = 40, 3 << 20
	var traj []wire.Event
	for n := 1; n <= turns; n++ {
		resp := strings.Repeat(string(rune('a'+n%26)), size)
		l.stepped(&wire.Observation{Metadata: wire.Metadata{TurnNumber: n, Response: &resp}})
		traj = append(traj, wire.Event{Type: "text_output", Turn: n})
	}
	if l.turns.bytes > maxWebBytes {
		t.Errorf("the window holds %d bytes, over its bound %d", l.turns.bytes, maxWebBytes)
	}
	kept := l.turns.len()
	if want := int(maxWebBytes / size); kept < want-1 || kept > want {
		t.Errorf("the window holds %d turns of 3 MiB, want %d or so", kept, want)
	}
	recs, dropped := l.records(traj)
	if dropped.lastTurn != turns-kept || dropped.turns != turns-kept {
		t.Errorf("dropped %+v, want turns 1–%d", dropped, turns-kept)
	}
	var obs, evs int
	for _, r := range recs[1:] {
		switch r.Kind {
		case wire.RecordObservation:
			obs++
			if r.Turn <= dropped.lastTurn || len(*r.Observation.Metadata.Response) != size || r.Observation.Metadata.Truncated != nil {
				t.Errorf("observation of turn %d kept (response %d bytes, truncated %+v)", r.Turn, len(*r.Observation.Metadata.Response), r.Observation.Metadata.Truncated)
			}
		case wire.RecordEvent:
			evs++
			if r.Event.Turn <= dropped.lastTurn {
				t.Errorf("event of dropped turn %d listed", r.Event.Turn)
			}
		}
	}
	if obs != kept || evs != kept {
		t.Errorf("%d observations and %d events listed, want %d each", obs, evs, kept)
	}
}

// TestWebLogCutsATurnLargerThanTheWindow checks that a turn larger than
// the whole window is kept cut to fit, with its marker: the response's
// start and the bytes it lost, a message's start and a note, the extra
// replaced by a note; and that the turn's whole observation is untouched.
func TestWebLogCutsATurnLargerThanTheWindow(t *testing.T) {
	var l webLog
	l.began(wire.Record{Kind: wire.RecordReset, EpisodeID: "ep"}, &wire.Observation{})
	msg := strings.Repeat("m", maxWebBytes/2)
	l.starting(wire.Record{Kind: wire.RecordMessage, Turn: 1, Content: &msg})
	resp := strings.Repeat("é", maxWebBytes) // two bytes a character
	obs := &wire.Observation{Metadata: wire.Metadata{TurnNumber: 1, Response: &resp,
		Extra: map[string]any{"blob": strings.Repeat("x", maxWebBytes/2)}}}
	rec := l.stepped(obs)
	if l.turns.bytes > maxWebBytes || l.turns.len() < 1 {
		t.Fatalf("the window holds %d turns, %d bytes (bound %d)", l.turns.len(), l.turns.bytes, maxWebBytes)
	}
	recs, _ := l.records(nil)
	o := recs[len(recs)-1]
	if o.Observation != rec.Observation {
		t.Errorf("the feed's record is not what the window keeps")
	}
	m := o.Observation.Metadata
	got := *m.Response
	if !utf8.ValidString(got) || !strings.HasPrefix(resp, got) || len(got) < maxWebBytes/4 {
		t.Errorf("kept a response of %d bytes (valid UTF-8 %v), want the start of the response", len(got), utf8.ValidString(got))
	}
	if m.Truncated == nil || m.Truncated.Reason != truncatedConsole || m.Truncated.ResponseBytesDropped != int64(len(resp)-len(got)) {
		t.Errorf("truncated %+v, want reason %s and %d response bytes dropped", m.Truncated, truncatedConsole, len(resp)-len(got))
	}
	if _, ok := m.Extra[truncatedConsole]; !ok || len(m.Extra) != 1 {
		t.Errorf("extra of %d keys kept, want the console's note alone", len(m.Extra))
	}
	if mr := recs[len(recs)-2]; mr.Kind != wire.RecordMessage || len(*mr.Content) > maxWebBytes/4+200 || !strings.Contains(*mr.Content, "the console keeps the first") {
		t.Errorf("message record of %d bytes, want its first quarter window and a note", len(*mr.Content))
	}
	if len(*obs.Metadata.Response) != len(resp) || len(obs.Metadata.Extra) != 1 || obs.Metadata.Truncated != nil {
		t.Errorf("the turn's own observation was changed")
	}
}
