package streamjson

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
)

// TestBadLinesAreLoggedWithinTheBound: an unreadable system/init line and
// an unreadable control_response were each a Warn record, every time
// (~50 bytes of the agent's output per record: 2,000 records for 2,000
// lines, millions a turn at the 16 MiB output limit). They go through the
// episode's adapterkit.LogLimit: the first records of each kind and
// summaries, which after Stop account for every line. The control: both
// kinds are logged.
func TestBadLinesAreLoggedWithinTheBound(t *testing.T) {
	const each = 1000
	var parts []string
	for range each {
		parts = append(parts, `rawline {"type":"system","subtype":"init","session_id":1}`,
			`rawline {"type":"control_response","response":1}`)
	}
	parts = append(parts, "reply done")
	l := launch(t, nil)
	h := &adaptertest.WarnCounter{}
	l.Logger = slog.New(h)
	a := startLaunch(t, l)
	res, _, err := turn(t, a, 1, strings.Join(parts, ";;"))
	records, _, _, kinds := h.Counts()
	t.Logf("turn: %q %v; %d warning records for %d bad lines", res.Response, err, records, 2*each)
	if err != nil || res.Response != "done" {
		t.Fatalf("turn: %q %v", res.Response, err)
	}
	if kinds != 2 {
		t.Fatalf("control: %d kinds of bad line logged, want 2 (%v)", kinds, h.Kinds())
	}
	if records > 100 {
		t.Fatalf("%d bad lines of one turn made %d warning log records", 2*each, records)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	records, logged, suppressed, _ := h.Counts()
	t.Logf("after Stop: %d records, %d lines logged in full, %d counted in summaries", records, logged, suppressed)
	if logged+suppressed != 2*each {
		t.Fatalf("the log accounts for %d+%d bad lines, want %d", logged, suppressed, 2*each)
	}
}
