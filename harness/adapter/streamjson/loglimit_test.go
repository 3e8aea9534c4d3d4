package streamjson

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// warnCounter counts the records of level Warn and above: those written in
// full, by message, and the records the summaries say were not written.
type warnCounter struct {
	mu         sync.Mutex
	full       map[string]int
	summaries  int
	suppressed int64
}

func (h *warnCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *warnCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	summary := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "suppressed" {
			h.suppressed += a.Value.Int64()
			summary = true
		}
		return true
	})
	if summary {
		h.summaries++
	} else {
		if h.full == nil {
			h.full = map[string]int{}
		}
		h.full[r.Message]++
	}
	return nil
}
func (h *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *warnCounter) WithGroup(string) slog.Handler      { return h }

func (h *warnCounter) counts() (records int, logged, suppressed int64, kinds int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.full {
		logged += int64(n)
	}
	return int(logged) + h.summaries, logged, h.suppressed, len(h.full)
}

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
	h := &warnCounter{}
	l.Logger = slog.New(h)
	a := startLaunch(t, l)
	res, _, err := turn(t, a, 1, strings.Join(parts, ";;"))
	records, _, _, kinds := h.counts()
	t.Logf("turn: %q %v; %d warning records for %d bad lines", res.Response, err, records, 2*each)
	if err != nil || res.Response != "done" {
		t.Fatalf("turn: %q %v", res.Response, err)
	}
	if kinds != 2 {
		t.Fatalf("control: %d kinds of bad line logged, want 2 (%v)", kinds, h.full)
	}
	if records > 100 {
		t.Fatalf("%d bad lines of one turn made %d warning log records", 2*each, records)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	records, logged, suppressed, _ := h.counts()
	t.Logf("after Stop: %d records, %d lines logged in full, %d counted in summaries", records, logged, suppressed)
	if logged+suppressed != 2*each {
		t.Fatalf("the log accounts for %d+%d bad lines, want %d", logged, suppressed, 2*each)
	}
}
