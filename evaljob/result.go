package evaljob

import (
	"time"

	"github.com/harnessd/harnessd/wire"
)

// Error types of trials that evaljob gives itself, beside the episode's
// own (wire.FailureType: startup_failed, turn_timeout, harness_crashed...).
const (
	// ErrSetup: the trial's session could not be made (configuration,
	// session directory).
	ErrSetup = "setup_failed"
	// ErrReset: the episode could not be reset (an infrastructure error,
	// not a harness that failed to start: that is startup_failed).
	ErrReset = "reset_failed"
	// ErrStep: the turn could not be run (an infrastructure error).
	ErrStep = "step_failed"
	// ErrNotGraded: the episode ended without its tests running.
	ErrNotGraded = "not_graded"
	// ErrNoReward: the tests ran but gave no reward that could be read
	// (the grade's error says why).
	ErrNoReward = "no_reward"
	// ErrOracle: the oracle's run of the task could not happen (its
	// solve.sh or its tests could not be started).
	ErrOracle = "oracle_error"
	// ErrArtifacts: the trial ran and was graded, but its files (record,
	// trajectory) could not be kept; its reward stands.
	ErrArtifacts = "artifacts_error"
)

// Result is one finished trial: its result.json and its line of
// results.jsonl.
type Result struct {
	// Trial is the trial's name, its directory under trials/.
	Trial string `json:"trial"`
	// Agent and Task say what ran; Attempt counts from 1 to the job's k.
	Agent   string `json:"agent"`
	Task    string `json:"task"`
	Attempt int    `json:"attempt"`
	// Reward is the tests' reward; nil when the trial could not be graded
	// (ErrorType says why): such a trial did not run, for the exit status.
	Reward *float64 `json:"reward"`
	// ErrorType classifies what went wrong ("" when nothing did): the
	// episode's failure type (wire.FailureType), or one of the Err*
	// constants. A graded failure (a turn timeout) has a reward beside it.
	ErrorType string `json:"error_type,omitempty"`
	// Error says what went wrong.
	Error string `json:"error,omitempty"`
	// Retries counts the tries before this one that failed with a
	// retryable error; PreviousErrors are their error types, in order.
	Retries        int      `json:"retries,omitempty"`
	PreviousErrors []string `json:"previous_errors,omitempty"`
	// Grade is how the tests graded the trial (reward, scores, exit,
	// output tails, duration).
	Grade *wire.TaskGrade `json:"grade,omitempty"`
	// Solve are the oracle's runs of solve.sh (oracle trials only): the
	// task's, or one per step of a task of several.
	Solve []*RunSummary `json:"solve,omitempty"`
	// Tokens are the model's prompt and completion tokens, from the
	// trajectory (absent when no model call was seen).
	Tokens *Tokens `json:"tokens,omitempty"`
	// Files are the trial's files, relative to its directory.
	Files []string `json:"files,omitempty"`
	// Started and Finished bound the trial's last try; DurationMS is the
	// time between, in milliseconds.
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	DurationMS float64   `json:"duration_ms"`
}

// Ran reports whether the trial ran to a reward.
func (r *Result) Ran() bool { return r.Reward != nil }

// RunSummary is a script's run: exit status, output tails, duration.
type RunSummary struct {
	// Step names the step of a task of several steps the run was for.
	Step       string           `json:"step,omitempty"`
	Exit       *wire.ExitStatus `json:"exit,omitempty"`
	TimedOut   bool             `json:"timed_out,omitempty"`
	StdoutTail string           `json:"stdout_tail,omitempty"`
	StderrTail string           `json:"stderr_tail,omitempty"`
	DurationMS float64          `json:"duration_ms"`
}

// Tokens count a trial's model tokens.
type Tokens struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
}
