package tasks

import (
	"time"
)

// DefaultWorkDir is a task's working directory when its Dockerfile has no
// WORKDIR (Harbor's base images use /app).
const DefaultWorkDir = "/app"

// DefaultVerifierTimeout bounds a task's tests when task.toml does not
// ([verifier] timeout_sec); it is Harbor's default.
const DefaultVerifierTimeout = 600 * time.Second

// Task is one loaded, validated task.
type Task struct {
	// ID names the task: its directory's name (Harbor) or the line's "id"
	// (JSONL). It is unique in a Set.
	ID string `json:"id"`
	// Name is [task] name (or the JSONL "name"); empty when not given.
	Name string `json:"name,omitempty"`
	// Description is [task] description, when given.
	Description string `json:"description,omitempty"`
	// Instruction is the prompt given to the agent (instruction.md).
	Instruction string `json:"instruction"`
	// Metadata is [metadata] (or the JSONL "metadata"), as given.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Source is where the task was read from (a directory, or FILE:LINE).
	Source string `json:"source"`

	// WorkDir is the absolute working directory the environment's files
	// live in (the Dockerfile's last WORKDIR, DefaultWorkDir without one):
	// the workspace is mounted there in sandbox isolation and while grading.
	WorkDir string `json:"workdir"`
	// Env are the environment's variables (Dockerfile ENV, in order),
	// each KEY=VALUE, given to the harness and to the tests.
	Env []string `json:"env,omitempty"`

	// AgentTimeout is [agent] timeout_sec: the episode's budget (0: none).
	AgentTimeout time.Duration `json:"agent_timeout,omitempty"`
	// VerifierTimeout is [verifier] timeout_sec: the tests' budget.
	VerifierTimeout time.Duration `json:"verifier_timeout"`
	// VerifierEnv is [verifier] env, added to the tests' environment.
	VerifierEnv []string `json:"verifier_env,omitempty"`
	// SolutionEnv is [solution] env, added to the oracle's environment.
	SolutionEnv []string `json:"solution_env,omitempty"`
	// Limits are [environment] cpus and memory_mb.
	Limits Limits `json:"limits,omitzero"`
	// AllowInternet is [environment] allow_internet (nil: not given).
	AllowInternet *bool `json:"allow_internet,omitempty"`
	// MCPServers are [environment] mcp_servers.
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
	// EnvironmentEnv is [environment] env, resolved (part of Env too).
	EnvironmentEnv []string `json:"environment_env,omitempty"`
	// AgentNetwork and VerifierNetwork are the phases' network policies
	// as the task states them ([environment] network_mode or
	// allow_internet, the [agent] and [verifier] overrides). The grader
	// gets the egress proxy only when VerifierNetwork allows it and the
	// environment's egress policy does (RunOptions.Egress).
	AgentNetwork    Network `json:"agent_network,omitzero"`
	VerifierNetwork Network `json:"verifier_network,omitzero"`
	// AgentUser and VerifierUser are [agent] user and [verifier] user
	// (nil: root, Harbor's default).
	AgentUser    *User `json:"agent_user,omitempty"`
	VerifierUser *User `json:"verifier_user,omitempty"`
	// Separate says the verifier runs in an environment of its own
	// ([verifier] environment_mode = "separate"): a fresh workspace holding
	// only the declared Artifacts, not the agent's.
	Separate bool `json:"separate_verifier,omitempty"`
	// VerifierLimits are [verifier.environment] cpus and memory_mb.
	VerifierLimits Limits `json:"verifier_limits,omitzero"`
	// Artifacts are the task's declared artifact paths (task-level).
	Artifacts []string `json:"artifacts,omitempty"`
	// Steps are a multi-step task's steps, in order (nil: one step).
	Steps []Step `json:"steps,omitempty"`
	// StepStrategy is multi_step_reward_strategy ("mean" by default).
	StepStrategy string `json:"multi_step_reward_strategy,omitempty"`
	// Warnings say what of the task is not honoured (ignored task.toml
	// keys, Dockerfile instructions, copies outside WorkDir).
	Warnings []string `json:"warnings,omitempty"`

	// copies place the environment's files, in Dockerfile order.
	copies []copyOp
	// files are a JSONL task's inline files (path relative to WorkDir).
	files map[string]string
	// testsDir and solutionDir are the host directories of tests/ and
	// solution/ ("" when absent).
	testsDir, solutionDir string
	// grader is a JSONL task's grader command (nil: bash /tests/test.sh).
	grader []string
	// exitReward says the grader's exit status is the reward when it
	// writes no reward file (JSONL tasks).
	exitReward bool
	// hidden are the host paths the harness must never see.
	hidden []string
	// separateEnv is a separate verifier's own environment (tests/
	// Dockerfile ENV, [verifier.environment] env).
	separateEnv []string
}

// Limits are a task's resource requests, applied as the grading sandbox's
// cgroup limits (and recorded for the harness's sandbox).
type Limits struct {
	// CPUs is the CPU quota in cores (0: none).
	CPUs float64 `json:"cpus,omitempty"`
	// MemoryMB is the memory limit in MiB (0: none).
	MemoryMB int64 `json:"memory_mb,omitempty"`
}

// MCPServer is one entry of [environment] mcp_servers.
type MCPServer struct {
	Name      string   `json:"name" toml:"name"`
	Transport string   `json:"transport,omitempty" toml:"transport"`
	URL       string   `json:"url,omitempty" toml:"url"`
	Command   string   `json:"command,omitempty" toml:"command"`
	Args      []string `json:"args,omitempty" toml:"args"`
}

// HasTests reports whether the task has a tests/ directory.
func (t *Task) HasTests() bool { return t.testsDir != "" }

// HasSolution reports whether the task has solution/solve.sh.
func (t *Task) HasSolution() bool { return t.solutionDir != "" }

// HiddenPaths are the host paths of the task that the harness must never
// see (its tests/ and solution/, task.toml and the JSONL file): sandbox
// isolation hides them (sandbox.Config.Hide).
func (t *Task) HiddenPaths() []string { return append([]string(nil), t.hidden...) }

// MemoryBytes is Limits.MemoryMB in bytes.
func (l Limits) MemoryBytes() int64 { return l.MemoryMB << 20 }
