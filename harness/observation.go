package harness

import (
	"encoding/json"

	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/rubric"
)

// Metadata is everything an observation reports. Absent fields are omitted
// from the wire form; a step observation always carries response,
// turn_events and turn_number.
type Metadata struct {
	EpisodeID     string              `json:"episode_id,omitempty"`
	TurnNumber    int                 `json:"turn_number,omitempty"`
	Response      *string             `json:"response,omitempty"`
	TurnEvents    []Event             `json:"turn_events,omitempty"`
	HarnessDone   bool                `json:"harness_done,omitempty"`
	Cancelled     bool                `json:"cancelled,omitempty"`
	InjectedTools []string            `json:"injected_tools,omitempty"`
	RewardDetails []rubric.Result     `json:"reward_details,omitempty"`
	ErrorType     ErrorType           `json:"error_type,omitempty"`
	Error         string              `json:"error,omitempty"`
	Exit          *process.ExitStatus `json:"exit,omitempty"`
	StderrTail    string              `json:"stderr_tail,omitempty"`
	// Extra holds adapter-specific facts of the turn (stop reason, usage).
	Extra map[string]any `json:"extra,omitempty"`
}

// Observation is the result of Reset or Step.
type Observation struct {
	Reward   *float64
	Done     bool
	Metadata Metadata
}

// ResponseText returns the turn's response, or "".
func (o *Observation) ResponseText() string {
	if o.Metadata.Response == nil {
		return ""
	}
	return *o.Metadata.Response
}

// MarshalJSON writes OpenEnv's serialization: the observation's fields under
// "observation" (here only metadata), reward and done beside it, and the
// metadata repeated as a top-level sibling for newer clients.
func (o Observation) MarshalJSON() ([]byte, error) { return o.AppendJSON(nil) }

// UnmarshalJSON reads the wire form written by MarshalJSON. Metadata is taken
// from the top level, or from inside "observation" for older servers.
func (o *Observation) UnmarshalJSON(b []byte) error {
	var w struct {
		Observation struct {
			Metadata *Metadata `json:"metadata"`
		} `json:"observation"`
		Reward   *float64  `json:"reward"`
		Done     bool      `json:"done"`
		Metadata *Metadata `json:"metadata"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	o.Reward, o.Done = w.Reward, w.Done
	switch {
	case w.Metadata != nil:
		o.Metadata = *w.Metadata
	case w.Observation.Metadata != nil:
		o.Metadata = *w.Observation.Metadata
	default:
		o.Metadata = Metadata{}
	}
	return nil
}

// State is a session's current episode, as reported by state().
type State struct {
	EpisodeID    *string    `json:"episode_id"`
	StepCount    int        `json:"step_count"`
	Active       bool       `json:"active"`
	Done         bool       `json:"done"`
	TurnRunning  bool       `json:"turn_running"`
	HarnessPID   int        `json:"harness_pid,omitempty"`
	HarnessAlive bool       `json:"harness_alive"`
	Tools        []string   `json:"tools"`
	LastError    *LastError `json:"last_error,omitempty"`
}

// LastError is the failure that ended the last episode, if any.
type LastError struct {
	Type    ErrorType `json:"type"`
	Message string    `json:"message"`
}
