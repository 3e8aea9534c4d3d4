package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	// RecordWorkspace lists the workspace paths a turn changed, after the
	// turn's observation (Workspace).
	RecordWorkspace = "workspace"
)

// Record is one line of an episode's record file (harnessd's record_dir):
// one JSON object per line, in the order things happened, a complete account
// from which the episode's turns can be rebuilt. Kind says which of the other
// fields are set. docs/configuration.md describes the file.
type Record struct {
	// Kind is one of RecordReset, RecordMessage, RecordEvent, RecordObservation,
	// RecordWorkspace.
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
	// Source says who wrote a message when it was not the trainer:
	// SourceUser (the simulated user) or SourceTask (the task's
	// instruction).
	Source string `json:"source,omitempty"`

	// Event is an event record's event.
	Event *Event `json:"event,omitempty"`

	// Observation is an observation record's observation in its wire form.
	Observation *Observation `json:"observation,omitempty"`

	// Workspace is a workspace record's changes (with Turn).
	Workspace *WorkspaceChanges `json:"workspace,omitempty"`
}

// WorkspaceChanges are the paths of the workspace a turn changed: the
// files and directories whose status changed (ctime) since the turn began,
// found by a bounded walk. A file's content or mode changed, or it was
// created, renamed or linked; a directory in Changed had entries added,
// removed or renamed (a removed file shows as its directory). Paths are
// relative to the workspace, "/"-separated, a directory's ending in "/".
type WorkspaceChanges struct {
	// Changed are the changed paths in walk order, at most a bound of
	// them and of their bytes.
	Changed []string `json:"changed"`
	// More counts changed paths left out of Changed by its bounds.
	More int `json:"more,omitempty"`
	// Walked counts the entries examined; Partial says the walk stopped at
	// its bound, so changes deeper in the workspace may be missing.
	Walked  int  `json:"walked"`
	Partial bool `json:"partial,omitempty"`
}

// CutError is ReadRecords' error when the last line of a record file is
// cut short: no newline ends it and it does not decode, as a writer stopped
// mid-line leaves it (a daemon killed while writing). The records before it
// are whole and returned with it; a reader may go on with them, noting the
// cut.
type CutError struct {
	Line  int // the cut line's number, from 1
	Bytes int // its length
}

func (e *CutError) Error() string {
	return fmt.Sprintf("record %d is cut short (%d bytes and no newline: its writer stopped mid-line, e.g. a daemon killed while writing it); the %d records before it are whole",
		e.Line, e.Bytes, e.Line-1)
}

// ReadRecords decodes a record file, one Record per line (blank lines are
// skipped). A line that does not decode is an error naming it; when it is
// the last line and no newline ends it the error is a *CutError, returned
// with the records before it.
func ReadRecords(r io.Reader) ([]Record, error) {
	br := bufio.NewReader(r)
	var out []Record
	for line := 1; ; line++ {
		b, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return out, fmt.Errorf("record %d: %w", line, rerr)
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			var rec Record
			if err := json.Unmarshal(t, &rec); err != nil {
				if rerr == io.EOF {
					return out, &CutError{Line: line, Bytes: len(b)}
				}
				return out, fmt.Errorf("record %d: %w", line, err)
			}
			out = append(out, rec)
		}
		if rerr == io.EOF {
			return out, nil
		}
	}
}
