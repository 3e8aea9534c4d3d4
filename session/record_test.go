package session_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// replayedTurn is one turn as the record file tells it.
type replayedTurn struct {
	message string
	events  []wire.Event
	obs     *wire.Observation
}

// TestRecordReplaysEpisode runs an episode with a tool call, a scored turn
// and a terminal failure, then reads the record file back and rebuilds the
// episode's turns from it alone: the reset, each message with its events
// and observation (reward and done included), in order.
func TestRecordReplaysEpisode(t *testing.T) {
	cfg := testConfig(t)
	cfg.RecordDir = t.TempDir()
	cfg.Rubrics = []rubric.Spec{{Name: "five", Type: rubric.KindMatch, Contains: "5"}}
	s := newSession(t, cfg)
	ro, err := s.Reset(context.Background(), session.ResetOptions{EpisodeID: "replay-1"})
	if err != nil {
		t.Fatal(err)
	}
	messages := []string{`tool add {"a":2,"b":3}`, "reply no number", "crash 4"}
	var live []*wire.Observation
	for _, m := range messages {
		live = append(live, step(t, s, m))
	}
	if live[2].Metadata.ErrorType != wire.FailureHarnessCrashed {
		t.Fatalf("turn 3: %+v", live[2].Metadata)
	}

	f, err := os.Open(filepath.Join(cfg.RecordDir, "replay-1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := wire.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 2 || recs[0].Kind != wire.RecordReset || recs[1].Kind != wire.RecordObservation {
		t.Fatalf("the file does not open with a reset and its observation: %+v", recs[:min(2, len(recs))])
	}
	rr := recs[0]
	if rr.EpisodeID != "replay-1" || rr.SessionID != s.ID() || rr.Config != "test" || rr.Adapter != "jsonl" ||
		rr.Isolation == "" || rr.Time == 0 || !reflect.DeepEqual(rr.Tools, ro.Metadata.InjectedTools) {
		t.Fatalf("reset record: %+v", rr)
	}
	if o := recs[1].Observation; o.Reward != nil || o.Done || o.Metadata.EpisodeID != "replay-1" {
		t.Fatalf("reset observation record: %+v", o)
	}

	var turns []replayedTurn
	for i, r := range recs[2:] {
		switch r.Kind {
		case wire.RecordMessage:
			if r.Turn != len(turns)+1 || r.Content == nil {
				t.Fatalf("record %d: message %+v after %d turns", i+2, r, len(turns))
			}
			turns = append(turns, replayedTurn{message: *r.Content})
		case wire.RecordEvent:
			if len(turns) == 0 || r.Event.Turn != len(turns) {
				t.Fatalf("record %d: event of turn %d while turn %d runs", i+2, r.Event.Turn, len(turns))
			}
			turns[len(turns)-1].events = append(turns[len(turns)-1].events, *r.Event)
		case wire.RecordObservation:
			if len(turns) == 0 || turns[len(turns)-1].obs != nil || r.Turn != len(turns) {
				t.Fatalf("record %d: observation of turn %d unexpected", i+2, r.Turn)
			}
			turns[len(turns)-1].obs = r.Observation
		case wire.RecordWorkspace:
			if len(turns) == 0 || turns[len(turns)-1].obs == nil || r.Turn != len(turns) || r.Workspace == nil {
				t.Fatalf("record %d: workspace record of turn %d unexpected", i+2, r.Turn)
			}
		default:
			t.Fatalf("record %d: kind %q", i+2, r.Kind)
		}
	}
	if len(turns) != len(messages) {
		t.Fatalf("replayed %d turns, ran %d", len(turns), len(messages))
	}
	for i, rt := range turns {
		want := live[i]
		if rt.message != messages[i] || rt.obs == nil {
			t.Fatalf("turn %d: message %q observation %v", i+1, rt.message, rt.obs)
		}
		if !reflect.DeepEqual(rt.obs.Reward, want.Reward) || rt.obs.Done != want.Done ||
			rt.obs.Metadata.ErrorType != want.Metadata.ErrorType || rt.obs.ResponseText() != want.ResponseText() {
			t.Fatalf("turn %d: replayed %+v reward %v, ran %+v reward %v", i+1, rt.obs.Metadata, rt.obs.Reward, want.Metadata, want.Reward)
		}
		if got, ran := eventTypes(rt.events), eventTypes(want.Metadata.TurnEvents); !reflect.DeepEqual(got, ran) {
			t.Fatalf("turn %d: replayed events %v, ran %v", i+1, got, ran)
		}
	}
	if r := turns[0].obs.Reward; r == nil || *r != 1 {
		t.Fatalf("turn 1 reward %v, want 1", r)
	}
	if r := turns[1].obs.Reward; r == nil || *r != 0 {
		t.Fatalf("turn 2 reward %v, want 0", r)
	}
	if !turns[2].obs.Done || turns[2].obs.Reward != nil {
		t.Fatalf("turn 3: done %v reward %v", turns[2].obs.Done, turns[2].obs.Reward)
	}
}

func eventTypes(evs []wire.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type)+"/"+string(e.Origin))
	}
	return out
}
