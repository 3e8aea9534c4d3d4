package eventlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/wire"
)

// recordedLog is an Log writing to a record file in a fresh directory.
func recordedLog(t testing.TB) (*Log, string) {
	t.Helper()
	dir := t.TempDir()
	rec, err := OpenRecorder(dir, "live")
	if err != nil {
		t.Fatal(err)
	}
	l := newTestLog(0, 0)
	l.Reset(rec)
	t.Cleanup(l.CloseRecord)
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
	l.BeginTurn(1, nil)
	l.Add(wire.Text(wire.OriginHarness, "first"))
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
	l.Add(wire.New(wire.OriginHarness, &wire.ToolCall{ToolName: "t"}))
	for {
		if got := texts(fileEvents(t, path)); len(got) == 2 && got[1] == "tool_call" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record holds %q, want the tool call after the text", texts(fileEvents(t, path)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	l.EndTurn()
}

// A run the flusher finds open is recorded in pieces at line boundaries
// which, joined by newlines, are the run's one event in the turn's events;
// a run it never saw is recorded whole, once.
func TestRecordPiecesOfAnOpenRun(t *testing.T) {
	l, path := recordedLog(t)
	// The timer fires a no-op: the test runs the flusher (flushDue) itself.
	l.flusher = time.AfterFunc(time.Hour, func() {})
	l.BeginTurn(1, nil)
	l.Add(wire.Text(wire.OriginHarness, "a"))
	l.flushDue()
	l.Add(wire.Text(wire.OriginHarness, "b"))
	l.Add(wire.Text(wire.OriginHarness, "c"))
	l.flushDue()
	l.flushDue() // nothing new: no empty piece
	l.Add(wire.Text(wire.OriginHarness, "d"))
	l.Add(wire.New(wire.OriginHarness, &wire.ToolCall{ToolName: "t"}))
	l.Add(wire.Text(wire.OriginHarness, "e"))
	l.Add(wire.Text(wire.OriginHarness, "f"))
	l.Add(wire.New(wire.OriginHarness, &wire.TurnComplete{Response: "r"}))
	evs := l.EndTurn()
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
	if traj, _ := l.Trajectory(); len(traj) != len(evs) {
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
		rec, err := OpenRecorder(dir, "again")
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
			var l *Log
			if mode == "none" {
				l = newTestLog(0, 0)
			} else {
				l, _ = recordedLog(b)
			}
			turn := 1
			l.BeginTurn(turn, nil)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := range b.N {
				if i%10_000 == 9_999 { // stay within a turn's bounds
					l.EndTurn()
					turn++
					l.BeginTurn(turn, nil)
				}
				l.Add(ev)
				if mode == "write-per-event" {
					l.mu.Lock()
					l.rec.flush()
					l.mu.Unlock()
				}
			}
			b.StopTimer()
			// The process's CPU: the flusher's writes included.
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/event")
			l.EndTurn()
		})
	}
}

// TestASecondLiveEpisodeOfAnIDDoesNotTouchTheFirstsRecord (red team 11): a
// client chooses the episode id, so two sessions may open the same record
// file at once. Before, the second OpenRecorder appended beside the first
// and, at its open, took the first's unterminated last record (a record
// larger than the buffer is written through before its newline) for a
// line cut by a killed daemon and truncated it: the first episode's record
// was gone from its file. Now the file is held while its episode records:
// the second open gets ErrEpisodeIDInUse and the first's record is whole.
// The control: once the first has closed, the id is reused (appended to),
// as documented.
func TestASecondLiveEpisodeOfAnIDDoesNotTouchTheFirstsRecord(t *testing.T) {
	dir := t.TempDir()
	first, err := OpenRecorder(dir, "shared")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 100<<10) // past the 64 KiB buffer: written through, newline pending
	first.note(wire.Record{Kind: wire.RecordMessage, Turn: 1, Content: &big})

	second, err := OpenRecorder(dir, "shared")
	if err == nil {
		second.close()
	}
	first.close()
	if !errors.Is(err, ErrEpisodeIDInUse) {
		t.Errorf("a second live episode of the id opened its record: err = %v, want ErrEpisodeIDInUse", err)
	}
	recs := readRecords(t, filepath.Join(dir, "shared.jsonl"))
	if len(recs) != 1 || recs[0].Content == nil || *recs[0].Content != big {
		t.Fatalf("the first episode's record file holds %d records, want its one %d-byte message", len(recs), len(big))
	}

	// Control: the id of an ended episode is reused, appending.
	again, err := OpenRecorder(dir, "shared")
	if err != nil {
		t.Fatalf("reusing the id of an ended episode: %v", err)
	}
	text := "again"
	again.note(wire.Record{Kind: wire.RecordMessage, Turn: 1, Content: &text})
	again.close()
	if recs := readRecords(t, filepath.Join(dir, "shared.jsonl")); len(recs) != 2 || recs[1].Content == nil || *recs[1].Content != text {
		t.Fatalf("after reuse the file holds %d records, want 2", len(recs))
	}
}

// readRecords reads every record of the record file at path.
func readRecords(t *testing.T, path string) []wire.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := wire.ReadRecords(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}
