package adapterkit

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// LogFirst is how many records of one kind a LogLimit writes in full in an
// episode; later ones are counted and summarized.
const LogFirst = 8

// maxLogKinds bounds the kinds a LogLimit counts apart; records of further
// kinds share one count (kinds are the messages of the adapter's code, so
// this is a guard against a message built from harness output).
const maxLogKinds = 64

// otherKinds is the kind that records past maxLogKinds are counted under.
const otherKinds = "harness output: records of further kinds"

// LogLimit bounds the log records a harness can cause an adapter to write:
// an adapter that logs what it does with the harness's output (a line it
// cannot use, a request it refuses) writes those records through one
// LogLimit per episode. Of each kind (message) the first LogFirst records
// of the episode are written in full; the rest are counted, and a summary
// record ("N more like this in this episode", with the total) is written
// when a kind's total reaches a power of two and, for what is left, at
// Close. A harness that floods one kind of bad line causes at most LogFirst
// + log2(lines) + 1 records of it per episode, however many turns it runs,
// and no count is lost.
//
// Powers of two rather than a summary per turn: a turn can be short, and a
// 60,000-turn episode would then still write one record per kind per turn.
//
// The message is the kind: it must be a constant of the adapter's code,
// never built from the harness's output (which belongs in the attributes).
// A record whose level the logger does not enable is neither written nor
// counted. The zero value writes to slog.Default(). A LogLimit is safe for
// concurrent use.
type LogLimit struct {
	log   *slog.Logger
	mu    sync.Mutex
	kinds map[string]*logKind
}

// logKind counts the records of one kind.
type logKind struct {
	level      slog.Level
	total      int64 // records of the kind in the episode
	unreported int64 // records not written since the last summary
}

// NewLogLimit returns a LogLimit writing to log (nil: slog.Default()).
func NewLogLimit(log *slog.Logger) *LogLimit { return &LogLimit{log: log} }

// Logger returns the logger the LogLimit writes to, for records the
// harness cannot cause (they need no bound).
func (l *LogLimit) Logger() *slog.Logger {
	if l.log == nil {
		return slog.Default()
	}
	return l.log
}

// Debug logs a record of kind msg at debug level, within the bound.
func (l *LogLimit) Debug(msg string, args ...any) { l.Log(slog.LevelDebug, msg, args...) }

// Info logs a record of kind msg at info level, within the bound.
func (l *LogLimit) Info(msg string, args ...any) { l.Log(slog.LevelInfo, msg, args...) }

// Warn logs a record of kind msg at warn level, within the bound.
func (l *LogLimit) Warn(msg string, args ...any) { l.Log(slog.LevelWarn, msg, args...) }

// Log logs a record of kind msg at level: in full while the kind has had
// at most LogFirst records in the episode, else as a count, summarized at
// each power of two.
func (l *LogLimit) Log(level slog.Level, msg string, args ...any) {
	ctx := context.Background()
	log := l.Logger()
	if !log.Enabled(ctx, level) {
		return
	}
	l.mu.Lock()
	if l.kinds == nil {
		l.kinds = map[string]*logKind{}
	}
	k := l.kinds[msg]
	if k == nil && len(l.kinds) >= maxLogKinds {
		msg = otherKinds
		k = l.kinds[msg]
	}
	if k == nil {
		k = &logKind{level: level}
		l.kinds[msg] = k
	}
	k.total++
	total := k.total
	if total <= LogFirst {
		l.mu.Unlock()
		if total == LogFirst {
			args = append(args, "log_limit", fmt.Sprintf(
				"the first %d records like this in an episode are logged; further ones are counted and summarized", LogFirst))
		}
		log.Log(ctx, level, msg, args...)
		return
	}
	k.unreported++
	if total&(total-1) != 0 {
		l.mu.Unlock()
		return
	}
	n := k.unreported
	k.unreported = 0
	l.mu.Unlock()
	summary(log, level, msg, n, total, "so far")
}

// Close writes the summary of every kind with records not reported yet:
// the episode is over. Records logged after Close are counted afresh.
func (l *LogLimit) Close() {
	type left struct {
		msg   string
		level slog.Level
		n, t  int64
	}
	var out []left
	l.mu.Lock()
	for msg, k := range l.kinds {
		if k.unreported > 0 {
			out = append(out, left{msg, k.level, k.unreported, k.total})
		}
	}
	l.kinds = nil
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b left) int { return strings.Compare(a.msg, b.msg) })
	log := l.Logger()
	for _, o := range out {
		summary(log, o.level, o.msg, o.n, o.t, "in all")
	}
}

// summary writes the record that stands for n records of kind msg not
// written, of total in the episode.
func summary(log *slog.Logger, level slog.Level, msg string, n, total int64, when string) {
	log.Log(context.Background(), level,
		fmt.Sprintf("%s: %d more like this in this episode, not logged (%d %s; only the first %d of a kind are logged in full)",
			msg, n, total, when, LogFirst),
		"kind", msg, "suppressed", n, "total", total)
}
