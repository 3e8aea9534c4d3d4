package bounds

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/wire"
)

func floodObservation(events int, response string) *wire.Observation {
	evs := make([]wire.Event, 0, events+2)
	for range events {
		evs = append(evs, wire.Text(wire.OriginHarness, strings.Repeat("z", 200)))
	}
	evs = append(evs, wire.ErrorEvent(wire.OriginDaemon, "notice", true))
	evs = append(evs, wire.New(wire.OriginHarness, &wire.TurnComplete{Response: response}))
	reward := 1.0
	return &wire.Observation{Reward: &reward, Metadata: wire.Metadata{
		EpisodeID: "ep", TurnNumber: 1, Response: &response, TurnEvents: evs,
		Truncated: &wire.Truncation{EventsDropped: 7, BytesDropped: 70, Reason: wire.TruncatedMaxBytes},
	}}
}

func decodeFrame(t *testing.T, b []byte) wire.Observation {
	t.Helper()
	var f struct {
		Type string           `json:"type"`
		Data wire.Observation `json:"data"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("frame is not JSON: %v", err)
	}
	if f.Type != "observation" {
		t.Fatalf("frame type %q", f.Type)
	}
	return f.Data
}

func TestEncodeObservationWithinLimitIsUntouched(t *testing.T) {
	obs := floodObservation(10, "fine")
	b, err := EncodeObservation(nil, obs, []byte(`{"type":"observation","data":`), []byte("}"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeFrame(t, b)
	if len(got.Metadata.TurnEvents) != 12 || got.Metadata.Truncated.Reason != wire.TruncatedMaxBytes {
		t.Errorf("kept %d events, truncated %+v; want all 12 and the marker as it was", len(got.Metadata.TurnEvents), got.Metadata.Truncated)
	}
}

func TestEncodeObservationDropsLastEventsToFit(t *testing.T) {
	obs := floodObservation(5000, "the answer")
	const limit = 200_000
	b, err := EncodeObservation(nil, obs, []byte(`{"type":"observation","data":`), []byte("}"), limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > limit {
		t.Fatalf("frame of %d bytes, limit %d", len(b), limit)
	}
	got := decodeFrame(t, b)
	md := got.Metadata
	tr := md.Truncated
	if tr == nil || tr.Reason != wire.TruncatedMaxBytes+","+wire.TruncatedFrame {
		t.Fatalf("truncated %+v, want both reasons", tr)
	}
	kept := len(md.TurnEvents) - 2
	if kept+tr.EventsDropped-7 != 5000 || tr.BytesDropped <= 70 {
		t.Errorf("kept %d and dropped %d text events of 5000 (marker %+v)", kept, tr.EventsDropped-7, tr)
	}
	if kept < 100 {
		t.Errorf("kept only %d events; the frame has room for more", kept)
	}
	if last := md.TurnEvents[len(md.TurnEvents)-1]; last.Type != wire.EventTurnComplete {
		t.Errorf("last event %s, want turn_complete", last.Type)
	}
	if md.TurnEvents[len(md.TurnEvents)-2].Origin != wire.OriginDaemon {
		t.Errorf("the daemon's event was dropped")
	}
	if *md.Response != "the answer" {
		t.Errorf("response %q was cut though events sufficed", *md.Response)
	}
	if obs.Metadata.Truncated.Reason != wire.TruncatedMaxBytes || len(obs.Metadata.TurnEvents) != 5002 {
		t.Errorf("the session's observation was modified")
	}
}

func TestEncodeObservationCutsAHugeResponse(t *testing.T) {
	resp := strings.Repeat("é", 100_000) // 200 KB, two bytes a rune
	obs := floodObservation(10, resp)
	const limit = 100_000
	b, err := EncodeObservation(nil, obs, nil, nil, limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > limit {
		t.Fatalf("observation of %d bytes, limit %d", len(b), limit)
	}
	var got wire.Observation
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	md := got.Metadata
	if md.Truncated.ResponseBytesDropped == 0 || int(md.Truncated.ResponseBytesDropped)+len(*md.Response) != len(resp) {
		t.Errorf("response of %d bytes kept, %d dropped, of %d", len(*md.Response), md.Truncated.ResponseBytesDropped, len(resp))
	}
	if !strings.HasPrefix(resp, *md.Response) || strings.ContainsRune(*md.Response, '\uFFFD') {
		t.Errorf("the response was not cut at a rune boundary")
	}
	tc := md.TurnEvents[len(md.TurnEvents)-1].Data.(*wire.TurnComplete)
	if tc.Response != *md.Response {
		t.Errorf("turn_complete keeps a response of %d bytes, metadata %d", len(tc.Response), len(*md.Response))
	}
}

func TestEncodeObservationImpossibleLimit(t *testing.T) {
	if _, err := EncodeObservation(nil, floodObservation(3, "x"), nil, nil, 50); err == nil {
		t.Fatal("an observation cannot fit in 50 bytes, yet no error")
	}
}

// TestEncodeObservationAppends checks that the encoding is appended to
// dst, which keeps its bytes, and that the limit bounds only what is
// appended: the same bytes as into an empty buffer, trimmed or not.
func TestEncodeObservationAppends(t *testing.T) {
	for _, limit := range []int64{1 << 20, 100_000} {
		obs := floodObservation(10, strings.Repeat("é", 100_000))
		want, err := EncodeObservation(nil, obs, []byte("<"), []byte(">"), limit)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, 0, 64<<10) // a reused buffer: room, and old bytes past len
		dst = append(dst, "kept"...)
		got, err := EncodeObservation(dst, obs, []byte("<"), []byte(">"), limit)
		if err != nil {
			t.Fatal(err)
		}
		if string(got[:4]) != "kept" || string(got[4:]) != string(want) {
			t.Fatalf("limit %d: appended %d bytes after %q, want the %d bytes encoded alone", limit, len(got)-4, got[:min(4, len(got))], len(want))
		}
	}
}
