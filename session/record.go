package session

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/recordfile"
	"github.com/harnessd/harnessd/wire"
)

// resetRecord describes the episode s is starting.
func (s *Session) resetRecord(r *run) wire.Record {
	return wire.Record{
		Kind: wire.RecordReset, Time: wire.Now(), EpisodeID: r.id, SessionID: s.id, Config: s.cfg.Name,
		Agent: s.cfg.Harness.Agent, Adapter: s.cfg.Harness.Adapter, Isolation: s.isolationName(),
		Tools: append([]string{}, r.ep.Tools()...),
	}
}

// messageRecord records turn's message; source says who wrote it when it
// was not the trainer (wire.SourceUser, wire.SourceTask).
func messageRecord(turn int, content, source string) wire.Record {
	return wire.Record{Kind: wire.RecordMessage, Time: wire.Now(), Turn: turn, Content: &content, Source: source}
}

// observationRecord records o without its turn events, which the file holds
// as event records already.
func observationRecord(o *wire.Observation) wire.Record {
	c := *o
	c.Metadata.TurnEvents = nil
	return wire.Record{Kind: wire.RecordObservation, Time: wire.Now(), Turn: o.Metadata.TurnNumber, Observation: &c}
}

// recordFlushBound bounds how long a kept event waits in the recorder's
// buffer before it is written to the record file: the eventLog's flusher
// writes it (and the text of an open run) at most this long after it was
// kept, so the file follows a running turn, and a daemon killed mid-turn
// leaves what the turn did up to then. The records of resets, messages and
// observations are written at once. docs/benchmarks.md ("Record files
// within a turn") measures this against a write per event.
const recordFlushBound = 100 * time.Millisecond

// recorder appends an episode's records to a JSONL file through a bounded
// buffer (writes beyond it go straight through).
type recorder struct {
	f    *os.File
	w    *bufio.Writer
	name string // the file's name in the record directory
}

func openRecorder(dir, episodeID string) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create record directory: %w", err)
	}
	name := filepath.Base(recordfile.Record(dir, episodeID))
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open trajectory record: %w", err)
	}
	if err := dropCutLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open trajectory record %s: %w", name, err)
	}
	return &recorder{f: f, w: bufio.NewWriterSize(f, 64<<10), name: name}, nil
}

// dropCutLine truncates f, a record file an episode appends to (its id was
// used before), after its last newline: a daemon killed while writing a
// line leaves that line cut short, and the next episode's reset must start
// a line of its own.
func dropCutLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	buf := make([]byte, 4096)
	for end > 0 {
		n := int64(len(buf))
		if n > end {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return fmt.Errorf("read its end: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if end == st.Size() {
		return nil
	}
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("drop its cut last line: %w", err)
	}
	return nil
}

// write appends an event record for e.
func (r *recorder) write(e wire.Event) {
	r.note(wire.Record{Kind: wire.RecordEvent, Time: e.Timestamp, Event: &e})
}

// note appends rec.
func (r *recorder) note(rec wire.Record) {
	if r == nil {
		return
	}
	if rec.Time == 0 {
		rec.Time = float64(time.Now().UnixMicro()) / 1e6
	}
	b, err := wire.MarshalNoEscape(rec)
	if err != nil {
		return
	}
	r.w.Write(b)
	r.w.WriteByte('\n')
}

func (r *recorder) flush() {
	if r != nil {
		r.w.Flush()
	}
}

func (r *recorder) close() {
	if r != nil {
		r.w.Flush()
		r.f.Close()
	}
}

// isolationName says how the episode's tree is contained and killed:
// "sandbox", or process isolation's kill mechanisms.
func (s *Session) isolationName() string {
	if s.env.Sandboxed() {
		return config.IsolationSandbox
	}
	return s.env.Supervisor.Mechanisms().KillMode()
}
