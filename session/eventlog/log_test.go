package eventlog

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/wire"
)

// runTurn runs turn n of l with one text line of text and the turn's end.
func runTurn(l *Log, n int, text string) []wire.Event {
	l.BeginTurn(n, nil)
	l.Add(wire.Text(wire.OriginHarness, text))
	l.Add(wire.New(wire.OriginHarness, &wire.TurnComplete{Response: "ok"}))
	return l.EndTurn()
}

// A long episode keeps a window of its latest WindowTurns turns in memory,
// counts what fell out, and its memory does not grow with the episode.
func TestEventLogWindowOfTurns(t *testing.T) {
	l := newTestLog(0, 0)
	const turns = 3*WindowTurns + 17
	maxCap := 0
	for n := 1; n <= turns; n++ {
		if evs := runTurn(l, n, "line"); len(evs) != 2 {
			t.Fatalf("turn %d kept %d events, want 2", n, len(evs))
		}
		if n > 2*WindowTurns {
			maxCap = max(maxCap, cap(l.traj))
		}
	}
	traj, om := l.Trajectory()
	if len(traj) != 2*WindowTurns {
		t.Fatalf("window holds %d events, want %d (the last %d turns)", len(traj), 2*WindowTurns, WindowTurns)
	}
	if first, last := traj[0].Turn, traj[len(traj)-1].Turn; first != turns-WindowTurns+1 || last != turns {
		t.Errorf("window spans turns %d–%d, want %d–%d", first, last, turns-WindowTurns+1, turns)
	}
	want := Omitted{Turns: turns - WindowTurns, Events: 2 * (turns - WindowTurns), LastTurn: turns - WindowTurns}
	if om != want {
		t.Errorf("omitted %+v, want %+v", om, want)
	}
	// The array is reallocated at the window's size, not the episode's.
	if maxCap > 4*2*WindowTurns {
		t.Errorf("the window's array grew to %d events for a window of %d", maxCap, 2*WindowTurns)
	}
	// A running turn is in the window too.
	l.BeginTurn(turns+1, nil)
	l.Add(wire.Text(wire.OriginHarness, "running"))
	l.Add(wire.Text(wire.OriginBridge, "other"))
	if traj, _ := l.Trajectory(); traj[len(traj)-1].Turn != turns+1 {
		t.Errorf("the running turn's events are not in the window: last %+v", traj[len(traj)-1])
	}
	l.EndTurn()

	// A new episode starts an empty window.
	l.Reset(nil)
	if traj, om := l.Trajectory(); len(traj) != 0 || om != (Omitted{}) {
		t.Errorf("after reset: %d events, omitted %+v", len(traj), om)
	}
}

// The window is bounded in bytes too, and always keeps the last ended turn
// whatever its size.
func TestEventLogWindowOfBytes(t *testing.T) {
	l := newTestLog(0, 0)
	big := strings.Repeat("x", 3<<20) // within a turn's 8 MiB cap
	for n := 1; n <= 20; n++ {
		runTurn(l, n, big)
	}
	traj, om := l.Trajectory()
	var size int64
	turns := map[int]bool{}
	for _, e := range traj {
		size += eventSize(e)
		turns[e.Turn] = true
	}
	if size > WindowBytes || len(turns) < WindowBytes/(4<<20) {
		t.Errorf("window holds %d turns, %d bytes (bound %d)", len(turns), size, WindowBytes)
	}
	if om.Turns != 20-len(turns) || om.LastTurn != 20-len(turns) {
		t.Errorf("omitted %+v with %d turns kept of 20", om, len(turns))
	}

	huge := strings.Repeat("y", 7<<20)
	l.Reset(nil)
	runTurn(l, 1, huge)
	runTurn(l, 2, huge)
	runTurn(l, 3, huge)
	if traj, _ := l.Trajectory(); len(traj) == 0 || traj[len(traj)-1].Turn != 3 {
		t.Errorf("the last ended turn is not kept")
	}
}

// TestEventSizeApproximatesTheEncoding: the sizes measured without
// encoding (text, chunks, errors, turn ends) stay within 64 bytes of the
// event's real encoding, for plain and escaped strings, so the window's
// byte bound means what it says.
func TestEventSizeApproximatesTheEncoding(t *testing.T) {
	for _, text := range []string{"", "x", strings.Repeat("ab", 300), "quote \" back \\ tab\t nl\n <html> é 😀"} {
		for _, p := range []wire.Payload{
			&wire.TextOutput{Text: text},
			&wire.LLMChunk{Content: text, MessageID: "msg_1"},
			&wire.Error{Message: text},
			&wire.TurnComplete{Response: text},
			&wire.TurnComplete{Response: text, Done: true, Cancelled: true},
		} {
			e := wire.New(wire.OriginHarness, p)
			e.Turn = 12345
			b, err := wire.MarshalNoEscape(e)
			if err != nil {
				t.Fatal(err)
			}
			if got, real := eventSize(e), int64(len(b)); got < real-64 || got > real+64 {
				t.Errorf("%T %q: measured %d, encoded %d bytes: %s", p, text, got, real, b)
			}
		}
	}
}

// TestAddWithoutARecordAllocatesNothing: an event kept in a log that writes
// no record file costs no allocation of its own (the trajectory's and the
// turn's lists grow by doubling, which the per-call average rounds away).
// Recorder.write once took its event's address, which moved every event
// to the heap, record file or not.
func TestAddWithoutARecordAllocatesNothing(t *testing.T) {
	l := newTestLog(0, 0)
	l.BeginTurn(1, nil)
	e := wire.New(wire.OriginHarness, &wire.TurnComplete{Response: "ok"}) // sized without encoding it
	if allocs := testing.AllocsPerRun(500, func() { l.Add(e) }); allocs != 0 {
		t.Fatalf("%.0f allocations per event added, want 0", allocs)
	}
	l.EndTurn()
}
