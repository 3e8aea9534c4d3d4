package wire

import (
	"strings"
	"testing"
)

func TestReadRecords(t *testing.T) {
	msg, reward := "hi", 0.5
	var b strings.Builder
	for _, r := range []Record{
		{Kind: RecordReset, Time: 1, EpisodeID: "ep", Tools: []string{"add"}},
		{Kind: RecordMessage, Time: 2, Turn: 1, Content: &msg},
		{Kind: RecordEvent, Time: 3, Event: &Event{Type: EventTextOutput, Timestamp: 3, Data: &TextOutput{Text: "hello"}, Turn: 1, Origin: OriginHarness}},
		{Kind: RecordObservation, Time: 4, Turn: 1, Observation: &Observation{Reward: &reward, Metadata: Metadata{EpisodeID: "ep", TurnNumber: 1}}},
	} {
		line, err := MarshalNoEscape(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	recs, err := ReadRecords(strings.NewReader(b.String()))
	if err != nil || len(recs) != 4 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	if recs[0].EpisodeID != "ep" || *recs[1].Content != "hi" || recs[2].Event.Data.(*TextOutput).Text != "hello" ||
		*recs[3].Observation.Reward != 0.5 || recs[3].Observation.Metadata.TurnNumber != 1 {
		t.Fatalf("%+v", recs)
	}
	_, err = ReadRecords(strings.NewReader(b.String() + "{not json\n"))
	if err == nil || !strings.Contains(err.Error(), "record 5") {
		t.Fatalf("a bad line: %v", err)
	}
}
