package wire

import (
	"errors"
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

// A last line cut short (no newline, not JSON) is a *CutError returned
// with the records before it; the same bytes ending in a newline, or mid-file,
// are an error, as a whole last line without its newline is not.
func TestReadRecordsCutLastLine(t *testing.T) {
	whole := `{"kind":"reset","time":1,"episode_id":"ep"}` + "\n" + `{"kind":"message","time":2,"turn":1,"content":"hi"}` + "\n"
	cut := `{"kind":"event","time":3,"event":{"type":"text_out`
	recs, err := ReadRecords(strings.NewReader(whole + cut))
	var ce *CutError
	if !errors.As(err, &ce) || ce.Line != 3 || ce.Bytes != len(cut) || len(recs) != 2 || *recs[1].Content != "hi" {
		t.Fatalf("cut last line: %d records, %v", len(recs), err)
	}
	if !strings.Contains(err.Error(), "record 3 is cut short") {
		t.Errorf("the note %q does not say which record is cut", err)
	}
	for _, bad := range []string{whole + cut + "\n", cut + "\n" + whole} {
		if _, err := ReadRecords(strings.NewReader(bad)); err == nil || errors.As(err, &ce) {
			t.Errorf("%q: %v, want a decoding error that is not a cut", bad, err)
		}
	}
	if recs, err := ReadRecords(strings.NewReader(strings.TrimSuffix(whole, "\n"))); err != nil || len(recs) != 2 {
		t.Errorf("a whole last line without its newline: %d records, %v", len(recs), err)
	}
}
