package session

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/wire"
)

// recordedLog is an eventLog writing to a record file in a fresh directory.
func recordedLog(t testing.TB) (*eventLog, string) {
	t.Helper()
	dir := t.TempDir()
	rec, err := openRecorder(dir, "live")
	if err != nil {
		t.Fatal(err)
	}
	l := newTestLog(0, 0)
	l.reset(rec)
	t.Cleanup(l.closeRecord)
	return l, filepath.Join(dir, "live.jsonl")
}

// fileEvents reads the event records of the record file at path.
func fileEvents(t *testing.T, path string) []wire.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := wire.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	var evs []wire.Event
	for _, r := range recs {
		if r.Kind == wire.RecordEvent {
			evs = append(evs, *r.Event)
		}
	}
	return evs
}

func texts(evs []wire.Event) []string {
	var out []string
	for _, e := range evs {
		if to, ok := e.Data.(*wire.TextOutput); ok {
			out = append(out, to.Text)
		} else {
			out = append(out, string(e.Type))
		}
	}
	return out
}

// The flusher writes what a running turn kept, an open run of text
// included, to the record file without waiting for the turn's end: the
// first event reaches the file within recordFlushBound (waited for with a
// generous deadline: the test never orders by sleeping).
func TestRecordFollowsTheRunningTurn(t *testing.T) {
	l, path := recordedLog(t)
	l.beginTurn(1, nil)
	l.add(wire.Text(wire.OriginHarness, "first"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := texts(fileEvents(t, path)); len(got) == 1 && got[0] == "first" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record holds %q 10 s after the turn's first event, want [first]", texts(fileEvents(t, path)))
		}
		time.Sleep(5 * time.Millisecond) // polling the file: what is waited for is its content
	}
	l.add(wire.New(wire.OriginHarness, &wire.ToolCall{ToolName: "t"}))
	for {
		if got := texts(fileEvents(t, path)); len(got) == 2 && got[1] == "tool_call" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record holds %q, want the tool call after the text", texts(fileEvents(t, path)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	l.endTurn()
}

// A run the flusher finds open is recorded in pieces at line boundaries
// which, joined by newlines, are the run's one event in the turn's events;
// a run it never saw is recorded whole, once.
func TestRecordPiecesOfAnOpenRun(t *testing.T) {
	l, path := recordedLog(t)
	// The timer fires a no-op: the test runs the flusher (flushDue) itself.
	l.flusher = time.AfterFunc(time.Hour, func() {})
	l.beginTurn(1, nil)
	l.add(wire.Text(wire.OriginHarness, "a"))
	l.flushDue()
	l.add(wire.Text(wire.OriginHarness, "b"))
	l.add(wire.Text(wire.OriginHarness, "c"))
	l.flushDue()
	l.flushDue() // nothing new: no empty piece
	l.add(wire.Text(wire.OriginHarness, "d"))
	l.add(wire.New(wire.OriginHarness, &wire.ToolCall{ToolName: "t"}))
	l.add(wire.Text(wire.OriginHarness, "e"))
	l.add(wire.Text(wire.OriginHarness, "f"))
	l.add(wire.New(wire.OriginHarness, &wire.TurnComplete{Response: "r"}))
	evs := l.endTurn()
	if got, want := strings.Join(texts(evs), "|"), "a\nb\nc\nd|tool_call|e\nf|turn_complete"; got != want {
		t.Fatalf("turn events %q, want %q", got, want)
	}
	rec := fileEvents(t, path)
	if got, want := strings.Join(texts(rec), "|"), "a|b\nc|d|tool_call|e\nf|turn_complete"; got != want {
		t.Fatalf("record events %q, want %q", got, want)
	}
	for i := 1; i < len(rec); i++ {
		if rec[i].Timestamp < rec[i-1].Timestamp || rec[i].Turn != 1 || rec[i].Origin != wire.OriginHarness {
			t.Fatalf("record event %d: %+v after %+v", i, rec[i], rec[i-1])
		}
	}
	if traj, _ := l.trajectory(); len(traj) != len(evs) {
		t.Errorf("trajectory holds %d events, the turn kept %d", len(traj), len(evs))
	}
}

// An episode id used again appends to its record file; a line the last
// writer left cut (a daemon killed mid-write) is dropped first, so the new
// reset starts a line of its own and the file reads whole.
func TestRecorderDropsACutLastLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "again.jsonl")
	whole := `{"kind":"message","time":1,"turn":1,"content":"hi"}` + "\n"
	for _, tc := range []struct{ name, before, after string }{
		{"cut", whole + `{"kind":"event","time":2,"ev`, whole},
		{"whole", whole, whole},
		{"only a cut line", `{"kind":"ev`, ""},
		{"empty", "", ""},
	} {
		if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
			t.Fatal(err)
		}
		rec, err := openRecorder(dir, "again")
		if err != nil {
			t.Fatal(err)
		}
		rec.note(wire.Record{Kind: wire.RecordReset, Time: 3, EpisodeID: "again"})
		rec.close()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.after + `{"kind":"reset","time":3,"episode_id":"again"}` + "\n"
		if string(b) != want {
			t.Errorf("%s: the file holds %q, want %q", tc.name, b, want)
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecordEvent is the record's cost per kept event (an llm_chunk,
// which is not coalesced) in a running turn: "buffered" is this package's
// way (written to a buffer, the flusher writes it within
// recordFlushBound), "write-per-event" writes each event to the file as it
// is kept, "none" has no record_dir. docs/benchmarks.md reports it.
func BenchmarkRecordEvent(b *testing.B) {
	ev := wire.New(wire.OriginHarness, &wire.LLMChunk{Content: "a forty-byte piece of the model's answer", Index: 7, MessageID: "msg_0123456789"})
	for _, mode := range []string{"none", "buffered", "write-per-event"} {
		b.Run(mode, func(b *testing.B) {
			var l *eventLog
			if mode == "none" {
				l = newTestLog(0, 0)
			} else {
				l, _ = recordedLog(b)
			}
			turn := 1
			l.beginTurn(turn, nil)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := range b.N {
				if i%10_000 == 9_999 { // stay within a turn's bounds
					l.endTurn()
					turn++
					l.beginTurn(turn, nil)
				}
				l.add(ev)
				if mode == "write-per-event" {
					l.mu.Lock()
					l.rec.flush()
					l.mu.Unlock()
				}
			}
			b.StopTimer()
			// The process's CPU: the flusher's writes included.
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/event")
			l.endTurn()
		})
	}
}
