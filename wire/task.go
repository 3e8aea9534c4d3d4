package wire

// TaskGrade is how a task's tests graded an episode (metadata.grade of the
// observation that ends it; docs/tasks.md).
type TaskGrade struct {
	// Reward is what the tests' reward file said (null when they wrote
	// none that could be read: Error says why).
	Reward *float64 `json:"reward"`
	// Scores are reward.json's named scores, when the tests wrote one.
	Scores map[string]float64 `json:"scores,omitempty"`
	// Exit is the tests' exit status (absent when they could not run).
	Exit *ExitStatus `json:"exit,omitempty"`
	// TimedOut says the tests exceeded [verifier] timeout_sec.
	TimedOut bool `json:"timed_out,omitempty"`
	// Limit names the cgroup limit the tests ran into (memory, pids).
	Limit string `json:"limit,omitempty"`
	// StdoutTail and StderrTail are the ends of the tests' output.
	StdoutTail string `json:"stdout_tail,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	// DurationMS is how long grading took, in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// Error says why there is no reward (no reward file, a timeout, no
	// sandbox on this host, a reward withheld).
	Error string `json:"error,omitempty"`
	// Tampered lists the processes other than the tests' own that wrote
	// the reward file; the reward is then withheld (null).
	Tampered []RewardWriter `json:"tampered,omitempty"`
	// RewardWatch says how the reward file's writers were watched
	// ("fanotify", or "off: " and why: the reward is then unverified).
	RewardWatch string `json:"reward_watch,omitempty"`
	// ErrorType classifies a missing reward that is not the agent's doing
	// (grader_needs_network).
	ErrorType FailureType `json:"error_type,omitempty"`
	// Step names the step of a multi-step task this grade is of.
	Step string `json:"step,omitempty"`
	// Steps are a multi-step task's grades, one per step that ran, in
	// order; Reward and Scores are then the task's, derived from them as
	// Harbor does (multi_step_reward_strategy).
	Steps []TaskGrade `json:"steps,omitempty"`
	// Stopped says why a multi-step task ended before its last step (a
	// step that failed, a min_reward it fell below).
	Stopped string `json:"stopped,omitempty"`
}

// RewardWriter is one process that wrote a task's reward file other than
// the tests' own leader.
type RewardWriter struct {
	File    string   `json:"file"`
	Pid     int      `json:"pid"`
	Command string   `json:"command,omitempty"`
	Events  []string `json:"events"`
}
