package adapterkit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
)

// recorder keeps the records it is given, at or above its level.
type recorder struct {
	level slog.Level
	mu    sync.Mutex
	recs  []slog.Record
}

func (h *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r)
	return nil
}
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recorder) WithGroup(string) slog.Handler      { return h }

// suppressed sums the "suppressed" attributes of the records.
func (h *recorder) suppressed() (n int64, summaries int) {
	for _, r := range h.recs {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "suppressed" {
				n += a.Value.Int64()
				summaries++
			}
			return true
		})
	}
	return n, summaries
}

// TestLogLimitBoundsAKindAndKeepsItsCount: 1000 records of one kind are
// 8 in full, summaries at 16, 32, ..., 512 and one at Close, whose
// suppressed counts add up to the 992 not written; a kind with few records
// is written in full (the control), and a disabled level is not counted.
func TestLogLimitBoundsAKindAndKeepsItsCount(t *testing.T) {
	h := &recorder{level: slog.LevelInfo}
	l := NewLogLimit(slog.New(h))
	for i := range 1000 {
		l.Warn("bad line", "i", i)
		l.Debug("bad line at debug", "i", i)
	}
	for i := range 3 {
		l.Info("rare line", "i", i)
	}
	if got, want := len(h.recs), LogFirst+6+3; got != want {
		t.Fatalf("%d records before Close, want %d", got, want)
	}
	l.Close()
	if got, want := len(h.recs), LogFirst+7+3; got != want {
		t.Fatalf("%d records after Close, want %d", got, want)
	}
	n, summaries := h.suppressed()
	if n != 1000-LogFirst || summaries != 7 {
		t.Fatalf("summaries report %d suppressed records in %d summaries, want %d in 7", n, summaries, 1000-LogFirst)
	}
	last := h.recs[len(h.recs)-1]
	if last.Level != slog.LevelWarn {
		t.Fatalf("the summary is at %v, not the kind's level", last.Level)
	}
	t.Logf("last summary: %s", last.Message)
	l.Close() // nothing left to report
	if got := len(h.recs); got != LogFirst+7+3 {
		t.Fatalf("a second Close wrote %d records", got-(LogFirst+7+3))
	}
}

// TestLogLimitBoundsTheKinds: messages built from distinct strings (a
// misuse) still share one bounded count past maxLogKinds.
func TestLogLimitBoundsTheKinds(t *testing.T) {
	h := &recorder{}
	l := NewLogLimit(slog.New(h))
	for i := range 10000 {
		l.Warn(fmt.Sprintf("kind %d", i))
	}
	if len(l.kinds) > maxLogKinds+1 {
		t.Fatalf("%d kinds kept", len(l.kinds))
	}
	if len(h.recs) > maxLogKinds+LogFirst+20 {
		t.Fatalf("%d records for 10000 distinct kinds", len(h.recs))
	}
	l.Close()
	n, _ := h.suppressed()
	if want := int64(10000 - maxLogKinds - LogFirst); n != want {
		t.Fatalf("%d suppressed reported, want %d", n, want)
	}
}

// TestLogLimitZeroValue writes to slog.Default().
func TestLogLimitZeroValue(t *testing.T) {
	h := &recorder{}
	prev := slog.Default()
	slog.SetDefault(slog.New(h))
	defer slog.SetDefault(prev)
	var l LogLimit
	l.Warn("x")
	if len(h.recs) != 1 {
		t.Fatalf("%d records", len(h.recs))
	}
}
