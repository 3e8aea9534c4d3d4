package console

import (
	"fmt"
	"testing"

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
	recs := l.records(traj)
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
	recs := l.records(traj[turns-maxWebTurns:])
	if recs[0].Kind != wire.RecordReset {
		t.Fatalf("first record %+v, want the reset", recs[0])
	}
	checkTurnRecords(t, recs[1:], turns-maxWebTurns+1, turns)

	before := cap(l.turns.turns)
	traj = logTurns(&l, 3)
	recs = l.records(traj)
	if len(recs) != 2+3*3 {
		t.Fatalf("the next episode has %d records, want %d", len(recs), 2+3*3)
	}
	checkTurnRecords(t, recs[2:], 1, 3)
	if cap(l.turns.turns) != before {
		t.Errorf("the next episode's window has capacity %d, want the same memory (%d)", cap(l.turns.turns), before)
	}
}
