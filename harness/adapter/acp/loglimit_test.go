package acp

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
)

// TestBadLinesAreLoggedWithinTheBound: the agent's lines the adapter cannot
// use (a response to an id it never used, a JSON-RPC object that is neither
// request, response nor notification, a malformed session/update, a call
// of an fs/ method) are logged through the episode's adapterkit.LogLimit:
// 2,000 bad lines in one turn were 2,000 Warn records (millions a turn at
// the 16 MiB output limit); now each kind is its first records and
// summaries, and once the episode is stopped the summaries account for
// every line. The control: every kind is logged.
func TestBadLinesAreLoggedWithinTheBound(t *testing.T) {
	const each = 500
	bad := []string{
		`{}`,
		`{"jsonrpc":"2.0","id":999999,"result":{}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":1}`,
		`{"jsonrpc":"2.0","id":"x","method":"fs/read_text_file","params":{}}`,
	}
	var parts []string
	for range each {
		for _, b := range bad {
			parts = append(parts, "rawline "+b)
		}
	}
	parts = append(parts, "reply done")
	l := launch(t)
	h := &adaptertest.WarnCounter{}
	l.Logger = slog.New(h)
	a := start(t, l)
	res, _, err := turn(t, a, 1, strings.Join(parts, ";;"))
	records, _, _, kinds := h.Counts()
	t.Logf("turn: %q %v; %d warning records for %d bad lines", res.Response, err, records, each*len(bad))
	if err != nil || res.Response != "done" {
		t.Fatalf("turn: %q %v", res.Response, err)
	}
	if kinds != len(bad) {
		t.Fatalf("control: %d kinds of bad line logged, want %d (%v)", kinds, len(bad), h.Kinds())
	}
	if records > 100 {
		t.Fatalf("%d bad lines of one turn made %d warning log records", each*len(bad), records)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	records, logged, suppressed, _ := h.Counts()
	t.Logf("after Stop: %d records, %d lines logged in full, %d counted in summaries", records, logged, suppressed)
	if logged+suppressed != each*int64(len(bad)) {
		t.Fatalf("the log accounts for %d+%d bad lines, want %d", logged, suppressed, each*len(bad))
	}
}
