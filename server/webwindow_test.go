package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/harnessd/harnessd/server/console"
	"github.com/harnessd/harnessd/wire"
)

// TestWebEpisodeWindow: past 1,000 turns the session keeps a window of the
// latest ones, and the console's view of the live episode says which turns
// it no longer shows and the record file they are in, while the turns it
// shows still have their messages, events and observations.
func TestWebEpisodeWindow(t *testing.T) {
	const turns = 1005
	ts, _ := webServer(t, "tok")
	c := ts.ws(t, "/ws", http.Header{"Authorization": {"Bearer tok"}})
	if f := roundTrip(t, c, `{"type":"reset","data":{}}`); f["type"] != "observation" {
		t.Fatalf("reset: %v", f)
	}
	for n := 1; n <= turns; n++ {
		if f := roundTrip(t, c, fmt.Sprintf(`{"type":"step","data":{"message":"reply t%d"}}`, n)); f["type"] != "observation" {
			t.Fatalf("step %d: %v", n, f)
		}
	}
	var list struct{ Sessions []console.SessionSummary }
	webGet(t, ts.url+"/web/api/sessions", "tok", &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("sessions: %+v", list)
	}
	var ep struct {
		Records []wire.Record
		Omitted *console.WebOmitted
	}
	if code := webGet(t, ts.url+"/web/api/sessions/"+list.Sessions[0].ID+"/episode", "tok", &ep); code != http.StatusOK {
		t.Fatalf("episode: %d", code)
	}
	const left = turns - 1000
	if ep.Omitted == nil || ep.Omitted.Turns != left || ep.Omitted.LastTurn != left || ep.Omitted.RecordFile == "" {
		t.Fatalf("omitted %+v, want turns 1–%d in a record file", ep.Omitted, left)
	}
	if code := webGet(t, ts.url+"/web/api/records/"+ep.Omitted.RecordFile, "tok", nil); code != http.StatusOK {
		t.Errorf("the named record file: %d", code)
	}
	first, messages, events, last := 0, 0, map[int]int{}, 0
	for i, r := range ep.Records {
		// In order: each turn's message, events and observation after the
		// turn before's (the console's window is a ring once full).
		turn := r.Turn
		if r.Kind == wire.RecordEvent {
			turn = r.Event.Turn
		}
		if r.Kind != wire.RecordReset && turn < last {
			t.Fatalf("record %d (%s) is of turn %d, after one of turn %d", i, r.Kind, turn, last)
		}
		last = max(last, turn)
		switch r.Kind {
		case wire.RecordEvent:
			if first == 0 {
				first = r.Event.Turn
			}
			events[r.Event.Turn]++
		case wire.RecordMessage:
			messages++
		}
	}
	if first != left+1 || len(events) != 1000 || messages != 1000 {
		t.Errorf("records from turn %d: %d turns with events, %d messages; want 1000 of each from turn %d", first, len(events), messages, left+1)
	}
}
