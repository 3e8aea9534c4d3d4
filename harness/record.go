package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harnessd/harnessd/wire"
)

// Kinds of record in an episode's record file (record_dir).
const (
	// RecordReset opens an episode: its id, configuration, adapter, tools.
	RecordReset = "reset"
	// RecordMessage is the user message of a turn, before the turn's events.
	RecordMessage = "message"
	// RecordEvent is one event of the episode, in trajectory order.
	RecordEvent = "event"
	// RecordObservation is the observation of a reset or a step, with its
	// reward and done, without turn_events (those are the event records of
	// the turn before it).
	RecordObservation = "observation"
)

// Record is one line of an episode's record file: one JSON object per line,
// in the order things happened. Kind says which of the other fields are set.
// docs/configuration.md describes the file.
type Record struct {
	// Kind is one of RecordReset, RecordMessage, RecordEvent, RecordObservation.
	Kind string `json:"kind"`
	// Time is when it happened, in unix seconds.
	Time float64 `json:"time"`

	// EpisodeID, SessionID, Config (the environment's name), Agent,
	// Adapter, Isolation (how the harness tree is contained and killed) and
	// Tools (the tool names served to the harness) describe a reset.
	EpisodeID string   `json:"episode_id,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
	Config    string   `json:"config,omitempty"`
	Agent     string   `json:"agent,omitempty"`
	Adapter   string   `json:"adapter,omitempty"`
	Isolation string   `json:"isolation,omitempty"`
	Tools     []string `json:"tools,omitempty"`

	// Turn and Content are a message: the turn's number and its text.
	Turn    int     `json:"turn,omitempty"`
	Content *string `json:"content,omitempty"`

	// Event is an event record's event.
	Event *wire.Event `json:"event,omitempty"`

	// Observation is an observation record's observation in its wire form.
	Observation *wire.Observation `json:"observation,omitempty"`
}

// ReadRecords decodes a record file.
func ReadRecords(r io.Reader) ([]Record, error) {
	dec := json.NewDecoder(r)
	var out []Record
	for line := 1; ; line++ {
		var rec Record
		err := dec.Decode(&rec)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("record %d: %w", line, err)
		}
		out = append(out, rec)
	}
}

// resetRecord describes the episode s is starting.
func (s *Session) resetRecord(ep *episode) Record {
	return Record{
		Kind: RecordReset, Time: wire.Now(), EpisodeID: ep.id, SessionID: s.id, Config: s.cfg.Name,
		Agent: s.cfg.Harness.Agent, Adapter: s.cfg.Harness.Adapter, Isolation: s.sup.Mechanisms().KillMode(),
		Tools: append([]string{}, ep.tools...),
	}
}

func messageRecord(turn int, content string) Record {
	return Record{Kind: RecordMessage, Time: wire.Now(), Turn: turn, Content: &content}
}

// observationRecord records o without its turn events, which the file holds
// as event records already.
func observationRecord(o *wire.Observation) Record {
	c := *o
	c.Metadata.TurnEvents = nil
	return Record{Kind: RecordObservation, Time: wire.Now(), Turn: o.Metadata.TurnNumber, Observation: &c}
}

// recorder appends an episode's records to a JSONL file.
type recorder struct {
	f *os.File
	w *bufio.Writer
}

func openRecorder(dir, episodeID string) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create record directory: %w", err)
	}
	name := safeFileName(episodeID) + ".jsonl"
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open trajectory record: %w", err)
	}
	return &recorder{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// write appends an event record for e.
func (r *recorder) write(e wire.Event) {
	r.note(Record{Kind: RecordEvent, Time: e.Timestamp, Event: &e})
}

// note appends rec.
func (r *recorder) note(rec Record) {
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

// safeFileName maps an episode id onto a file name.
func safeFileName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\\' {
			return '_'
		}
		return r
	}, s)
	if s == "" || s == "." || s == ".." {
		s = "episode"
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
