package session

import (
	"bufio"
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

// recorder appends an episode's records to a JSONL file.
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
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open trajectory record: %w", err)
	}
	return &recorder{f: f, w: bufio.NewWriterSize(f, 64<<10), name: name}, nil
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
