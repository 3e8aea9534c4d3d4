package wire

import (
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
)

// Record is one line of an episode's record file (harnessd's record_dir):
// one JSON object per line, in the order things happened, a complete account
// from which the episode's turns can be rebuilt. Kind says which of the other
// fields are set. docs/configuration.md describes the file.
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
	// Source says who wrote a message when it was not the trainer:
	// SourceUser (the simulated user) or SourceTask (the task's
	// instruction).
	Source string `json:"source,omitempty"`

	// Event is an event record's event.
	Event *Event `json:"event,omitempty"`

	// Observation is an observation record's observation in its wire form.
	Observation *Observation `json:"observation,omitempty"`
}

// ReadRecords decodes a record file, one Record per line.
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
