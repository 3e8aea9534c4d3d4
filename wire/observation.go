package wire

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FailureType classifies a terminal observation (metadata.error_type).
type FailureType string

// Failure types of terminal observations.
const (
	FailureStartupFailed  FailureType = "startup_failed"  // the harness did not start or become ready
	FailureTurnTimeout    FailureType = "turn_timeout"    // a turn exceeded its budget
	FailureHarnessCrashed FailureType = "harness_crashed" // the harness died during a turn
	FailureHarnessExited  FailureType = "harness_exited"  // the harness was gone before a turn began
	FailureProtocol       FailureType = "protocol_error"  // the harness broke its protocol
	FailureOutputLimit    FailureType = "output_limit"    // the harness flooded its output
	FailureEpisodeTimeout FailureType = "episode_timeout" // the episode's wall-clock budget ran out
	FailureMaxTurns       FailureType = "max_turns"       // the episode reached its turn limit
	FailureCancelled      FailureType = "cancelled"       // the turn was abandoned (client gone, shutdown)
	FailureModelBudget    FailureType = "model_budget"    // a model-call or output-token budget ran out
	// FailureResourceLimit: the harness tree ran into a limit of its
	// sandbox's cgroup (memory: the OOM killer ended it; pids: a fork was
	// refused) and ended.
	FailureResourceLimit FailureType = "resource_limit"
	// FailureUser: the simulated user (user:) failed to answer: its
	// program died, timed out or wrote what is not an answer, or its model
	// call failed.
	FailureUser FailureType = "user_failed"
	// FailureGraderNeedsNetwork: the task's tests install their tools at
	// grading time (apt-get, pip install, curl … | sh, uv …) and could not
	// reach the network; the task's reward is withheld (null), and
	// metadata.grade.error names the command. The agent's turn itself
	// ended normally.
	FailureGraderNeedsNetwork FailureType = "grader_needs_network"
)

// FailureTypes lists every failure type (for schemas and metrics labels).
var FailureTypes = []FailureType{
	FailureStartupFailed, FailureTurnTimeout, FailureHarnessCrashed, FailureHarnessExited, FailureProtocol,
	FailureOutputLimit, FailureEpisodeTimeout, FailureMaxTurns, FailureCancelled, FailureModelBudget,
	FailureResourceLimit, FailureUser, FailureGraderNeedsNetwork,
}

// ExitStatus is how a harness process ended.
type ExitStatus struct {
	// Code is the exit code, or -1 when the process was killed by a signal.
	Code int `json:"code"`
	// Signal names the killing signal (e.g. "SIGKILL"), empty for a normal exit.
	Signal string `json:"signal,omitempty"`
}

func (e ExitStatus) String() string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return "exited with code " + strconv.Itoa(e.Code)
}

// RewardDetail is one rubric's contribution to a reward.
type RewardDetail struct {
	// Name is the rubric's name.
	Name string `json:"name"`
	// Type is the rubric's type (command, match, tool, ...).
	Type string `json:"type"`
	// Weight is the rubric's weight in the sum.
	Weight float64 `json:"weight"`
	// Score is the rubric's score, null when it could not score.
	Score *float64 `json:"score"`
	// Error says why the rubric could not score.
	Error string `json:"error,omitempty"`
	// Detail is the rubric's explanation, if it gave one.
	Detail string `json:"detail,omitempty"`
}

// Metadata is everything an observation reports. Absent fields are omitted
// from the wire form; a step observation always carries response,
// turn_events and turn_number.
type Metadata struct {
	// EpisodeID is the episode's id.
	EpisodeID string `json:"episode_id,omitempty"`
	// TurnNumber is the 1-based turn the observation ends (0 after reset).
	TurnNumber int `json:"turn_number,omitempty"`
	// Response is the final text of the turn (nil after reset).
	Response *string `json:"response,omitempty"`
	// TurnEvents are the turn's events in time order.
	TurnEvents []Event `json:"turn_events,omitempty"`
	// HarnessDone says the harness declared the task complete.
	HarnessDone bool `json:"harness_done,omitempty"`
	// Cancelled says the turn was interrupted.
	Cancelled bool `json:"cancelled,omitempty"`
	// InjectedTools are the tool names the harness was given (after reset).
	InjectedTools []string `json:"injected_tools,omitempty"`
	// Isolation is how the episode's harness is contained: "sandbox" or
	// "process" (after reset).
	Isolation string `json:"isolation,omitempty"`
	// Standby says the reset handed over an episode prepared in advance
	// (warm: N): its harness was already started and ready.
	Standby bool `json:"standby,omitempty"`
	// Fork says where a forked episode came from (a sibling's first
	// observation); nil for an episode that was not forked.
	Fork *ForkOrigin `json:"fork,omitempty"`
	// RewardDetails are the rubrics' scores behind the reward.
	RewardDetails []RewardDetail `json:"reward_details,omitempty"`
	// ErrorType classifies a terminal failure ("" when none).
	ErrorType FailureType `json:"error_type,omitempty"`
	// Error says what the failure was.
	Error string `json:"error,omitempty"`
	// Exit is the harness's exit status after a failure, when known.
	Exit *ExitStatus `json:"exit,omitempty"`
	// StderrTail is the end of the harness's stderr after a failure.
	StderrTail string `json:"stderr_tail,omitempty"`
	// Truncated says what the turn's events leave out because a bound was
	// hit (nil when nothing was dropped).
	Truncated *Truncation `json:"truncated,omitempty"`
	// LimitsReached names the configured bounds the episode stood at when
	// the turn ended without ending the episode (LimitDisk: writes fail
	// with ENOSPC and the harness goes on); none when it stood at none.
	LimitsReached []string `json:"limits_reached,omitempty"`
	// Extra holds adapter-specific facts of the turn (stop reason, usage).
	Extra map[string]any `json:"extra,omitempty"`
	// ModelIssues are the problems the model gateway found in the turn's
	// captured calls (token ids missing, logprobs as strings, chains that
	// do not line up), graded by severity; none when all is well.
	ModelIssues []ModelIssue `json:"model_issues,omitempty"`
	// TaskID is the episode's task, when the environment serves a taskset
	// (reset and the final observation).
	TaskID string `json:"task_id,omitempty"`
	// TaskInstruction is the task's instruction (reset only).
	TaskInstruction string `json:"task_instruction,omitempty"`
	// TaskMetadata is the task's own metadata (reset only).
	TaskMetadata map[string]any `json:"task_metadata,omitempty"`
	// Grade is how the task's tests graded the episode (the observation
	// that ends it).
	Grade *TaskGrade `json:"grade,omitempty"`
	// MessageSource says who wrote the turn's message when it was not the
	// trainer: "user" (the simulated user) or "task" (the task's
	// instruction).
	MessageSource string `json:"message_source,omitempty"`
	// UserDone says the simulated user ended the episode after this turn;
	// UserReason is the reason it gave.
	UserDone   bool   `json:"user_done,omitempty"`
	UserReason string `json:"user_reason,omitempty"`
}

// Message sources (Metadata.MessageSource, Record.Source).
const (
	SourceUser = "user"
	SourceTask = "task"
)

// ModelIssue is one problem found in a captured model call, as the
// gateway's training export grades it (docs/gateway.md).
type ModelIssue struct {
	// Severity is "fatal" (the call is unusable for training), "warn" or
	// "info".
	Severity string `json:"severity"`
	// Code names the kind of problem (e.g. missing_token_ids).
	Code string `json:"code"`
	// CallIndex is the call concerned (0: a chain or the episode).
	CallIndex int `json:"call_index,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
}

// LimitDisk names the episode's storage bound in LimitsReached: its
// workspace, HOME and TMPDIR together are full.
const LimitDisk = "limits.disk"

// LimitSandboxTmp and LimitSandboxShm name the sandbox's own tmpfs mounts
// in LimitsReached: its private /tmp and /dev/shm are full (their sizes
// follow limits.memory; docs/security.md).
const (
	LimitSandboxTmp = "sandbox:/tmp"
	LimitSandboxShm = "sandbox:/dev/shm"
)

// Truncation reasons: the bound that dropped events of a turn.
const (
	TruncatedMaxEvents = "max_turn_events"      // episode.max_turn_events was reached
	TruncatedMaxBytes  = "max_turn_event_bytes" // episode.max_turn_event_bytes was reached
	TruncatedFrame     = "frame_limit"          // the observation frame would exceed the server's frame limit
)

// Truncation is the marker of a turn whose events were cut short: the turn
// went on, but what it reported beyond a bound was dropped, not kept.
type Truncation struct {
	// EventsDropped counts the events left out.
	EventsDropped int `json:"events_dropped"`
	// BytesDropped counts the encoded bytes of the events left out.
	BytesDropped int64 `json:"bytes_dropped"`
	// ResponseBytesDropped counts bytes cut from the end of the response to
	// fit the frame limit.
	ResponseBytesDropped int64 `json:"response_bytes_dropped,omitempty"`
	// Reason names the bounds that were hit (Truncated* constants), comma
	// separated in the order they were hit.
	Reason string `json:"reason"`
}

// AddReason records that bound r dropped something, once.
func (t *Truncation) AddReason(r string) {
	for _, have := range strings.Split(t.Reason, ",") {
		if have == r {
			return
		}
	}
	if t.Reason != "" {
		t.Reason += ","
	}
	t.Reason += r
}

// Observation is the result of a reset or a step.
//
// On the wire (OpenEnv's serialization) the observation's fields sit under
// "observation" (here only metadata), reward and done beside it, and the
// metadata is repeated as a top-level sibling for newer clients.
type Observation struct {
	// Reward is the step's reward; nil when nothing scored it.
	Reward *float64
	// Done says the episode is over.
	Done bool
	// Metadata is what the observation reports.
	Metadata Metadata
}

// ResponseText returns the turn's response, or "".
func (o *Observation) ResponseText() string {
	if o.Metadata.Response == nil {
		return ""
	}
	return *o.Metadata.Response
}

// MarshalJSON writes OpenEnv's serialization (see Observation).
func (o Observation) MarshalJSON() ([]byte, error) { return o.AppendJSON(nil) }

// AppendJSON appends the observation's wire form to dst, writing the
// metadata once and copying it to both places.
func (o *Observation) AppendJSON(dst []byte) ([]byte, error) {
	w := getWriter()
	defer putWriter(w)
	if err := w.metadata(&o.Metadata); err != nil {
		return nil, err
	}
	md := w.buf.Bytes()
	// Grow once to the final size (with room for a caller's last key): a
	// large observation is not copied through a series of doubling buffers.
	dst = slices.Grow(dst, 2*len(md)+256)
	dst = append(dst, `{"observation":{"metadata":`...)
	dst = append(dst, md...)
	dst = append(dst, `},"reward":`...)
	if o.Reward == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendFloat(dst, *o.Reward, 'f', -1, 64)
	}
	dst = append(dst, `,"done":`...)
	dst = strconv.AppendBool(dst, o.Done)
	dst = append(dst, `,"metadata":`...)
	dst = append(dst, md...)
	return append(dst, '}'), nil
}

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
	// EpisodeID is the current (or last) episode's id; null before the
	// first reset.
	EpisodeID *string `json:"episode_id"`
	// StepCount is the number of completed turns of the episode.
	StepCount int `json:"step_count"`
	// Active says the harness runs and steps are allowed.
	Active bool `json:"active"`
	// Done says the episode is over.
	Done bool `json:"done"`
	// TurnRunning says a reset or step is under way.
	TurnRunning bool `json:"turn_running"`
	// HarnessPID is the harness's process id while active.
	HarnessPID int `json:"harness_pid,omitempty"`
	// HarnessAlive says the harness process runs.
	HarnessAlive bool `json:"harness_alive"`
	// Tools are the tool names served to the harness.
	Tools []string `json:"tools"`
	// LastError is the failure that ended the last episode, if any.
	LastError *LastError `json:"last_error,omitempty"`
}

// LastError is the failure that ended the last episode.
type LastError struct {
	// Type classifies the failure.
	Type FailureType `json:"type"`
	// Message says what happened.
	Message string `json:"message"`
}

// Action is one step's input: the user message of a turn.
type Action struct {
	// Message is the user message.
	Message string `json:"message"`
	// Metadata is what the daemon reads of the client's own data about the
	// action: its submit and play keys (the server drops the rest).
	Metadata map[string]any `json:"metadata,omitempty"`
	// Timeout overrides the configured turn timeout for this step (0: use
	// the configuration), as OpenEnv's HTTP /step timeout_s does. It is not
	// part of the action's JSON.
	Timeout time.Duration `json:"-"`
}

// String describes the failure for logs.
func (l LastError) String() string { return fmt.Sprintf("%s: %s", l.Type, l.Message) }

// ForkOrigin is where a forked episode came from.
type ForkOrigin struct {
	// ParentSessionID and ParentEpisodeID name the episode forked.
	ParentSessionID string `json:"parent_session_id"`
	ParentEpisodeID string `json:"parent_episode_id"`
	// AtTurn is the parent's turn the sibling continues after.
	AtTurn int `json:"at_turn"`
	// Mechanism is how the sibling's harness reached the parent's state:
	// "resume", "line" or "replay".
	Mechanism string `json:"mechanism"`
	// ReplayedCalls and ReplayedToolCalls count what the doors answered
	// from the parent's records (replay only).
	ReplayedCalls     int `json:"replayed_calls,omitempty"`
	ReplayedToolCalls int `json:"replayed_tool_calls,omitempty"`
}
