package session

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/wire"
)

// resetRecord describes the episode s is starting.
func (s *Session) resetRecord(ep *episode) wire.Record {
	return wire.Record{
		Kind: wire.RecordReset, Time: wire.Now(), EpisodeID: ep.id, SessionID: s.id, Config: s.cfg.Name,
		Agent: s.cfg.Harness.Agent, Adapter: s.cfg.Harness.Adapter, Isolation: s.isolationName(),
		Tools: append([]string{}, ep.tools...),
	}
}

func messageRecord(turn int, content string) wire.Record {
	return wire.Record{Kind: wire.RecordMessage, Time: wire.Now(), Turn: turn, Content: &content}
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

// maxFileName bounds safeFileName's result, leaving room for the
// ".export.json" suffix under the usual 255-byte name limit.
const maxFileName = 200

// safeFileName maps an episode id onto a file name, injectively (ids "a/b"
// and "a_b" both became a_b): "%", "/", "\\" and control bytes are
// percent-escaped, "" "." and ".." escaped whole, and a name longer than
// maxFileName keeps its start and ends in "%~" and a hash of the id ("%~"
// cannot occur in an escaped name).
func safeFileName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c == '/' || c == '\\' || c < 0x20 || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	name := b.String()
	switch name {
	case "":
		return "%"
	case ".", "..":
		return strings.ReplaceAll(name, ".", "%2E")
	}
	if len(name) > maxFileName {
		sum := sha256.Sum256([]byte(s))
		cut := maxFileName - 2 - 16
		if i := strings.LastIndexByte(name[:cut], '%'); i >= cut-2 {
			cut = i // not inside an escape
		}
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "%~" + hex.EncodeToString(sum[:8])
	}
	return name
}

// isolationName says how the episode's tree is contained and killed:
// "sandbox", or process isolation's kill mechanisms.
func (s *Session) isolationName() string {
	if s.iso == config.IsolationSandbox {
		return config.IsolationSandbox
	}
	return s.sup.Mechanisms().KillMode()
}
