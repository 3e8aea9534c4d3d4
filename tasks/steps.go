package tasks

import (
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// Multi-step reward strategies (task.toml multi_step_reward_strategy).
const (
	// StrategyMean is the per-key mean over the steps that produced a
	// verifier result (Harbor's default).
	StrategyMean = "mean"
	// StrategyFinal is the last step's result as it is.
	StrategyFinal = "final"
)

// Step is one step of a multi-step task ([[steps]] in task.toml, its files
// in steps/NAME/): one turn of the agent with its own instruction, then
// its own tests. Steps share the workspace, in order.
type Step struct {
	// Name is the step's name and its directory under steps/.
	Name string `json:"name"`
	// Instruction is steps/NAME/instruction.md.
	Instruction string `json:"instruction"`
	// AgentTimeout and VerifierTimeout are the step's own (0: the task's).
	AgentTimeout    time.Duration `json:"agent_timeout,omitempty"`
	VerifierTimeout time.Duration `json:"verifier_timeout,omitempty"`
	// VerifierEnv is [steps.verifier] env, over the task's [verifier] env.
	VerifierEnv []string `json:"verifier_env,omitempty"`
	// AgentUser and VerifierUser override the task's (nil: the task's).
	AgentUser    *User `json:"agent_user,omitempty"`
	VerifierUser *User `json:"verifier_user,omitempty"`
	// MinReward, when set, ends the task after this step if a named reward
	// is below its threshold or missing ("reward" for a bare number).
	MinReward map[string]float64 `json:"min_reward,omitempty"`
	// Artifacts are the step's own artifacts (added to the task's).
	Artifacts []string `json:"artifacts,omitempty"`

	testsDir    string // steps/NAME/tests ("" without test.sh there)
	solutionDir string // steps/NAME/solution ("" without solve.sh)
	workdirDir  string // steps/NAME/workdir ("" when absent)
}

// HasSolution reports whether the step has solution/solve.sh.
func (s *Step) HasSolution() bool { return s.solutionDir != "" }

// HasSetup reports whether the step has workdir/setup.sh.
func (s *Step) HasSetup() bool {
	return s.workdirDir != "" && exists(filepath.Join(s.workdirDir, "setup.sh"))
}

// loadSteps reads [[steps]] and steps/NAME/ for each: instruction.md is
// required, test.sh comes from the step's tests/ or else the task's, the
// task-level tests/ is the shared helpers under the step's own files (as
// Harbor uploads them).
func (t *Task) loadSteps(dir string, cfg taskTOML) []error {
	var errs []error
	if exists(filepath.Join(dir, "instruction.md")) {
		t.Warnings = append(t.Warnings, "instruction.md ignored: a multi-step task's instructions are steps/NAME/instruction.md")
	}
	tests := filepath.Join(dir, "tests")
	if fi, err := os.Stat(tests); err == nil && fi.IsDir() {
		t.testsDir = tests
	}
	sharedTest := exists(filepath.Join(tests, "test.sh"))
	if exists(filepath.Join(dir, "solution")) {
		t.Warnings = append(t.Warnings, "solution/ ignored: a multi-step task's solutions are steps/NAME/solution/solve.sh")
	}
	t.StepStrategy = orDefault(t.StepStrategy, StrategyMean)
	seen := map[string]bool{}
	for i, st := range cfg.Steps {
		key := fmt.Sprintf("steps[%d]", i)
		s := Step{Name: st.Name}
		if st.Name == "" || st.Name != path.Base(st.Name) || st.Name == "." || st.Name == ".." {
			errs = append(errs, fmt.Errorf("%s.name %q: want the name of a directory under steps/", key, st.Name))
			continue
		}
		if seen[st.Name] {
			errs = append(errs, fmt.Errorf("%s.name %q: given twice", key, st.Name))
			continue
		}
		seen[st.Name] = true
		key = fmt.Sprintf("steps[%q]", st.Name)
		sd := filepath.Join(dir, "steps", st.Name)
		instr, err := readInstruction(dir, filepath.Join(sd, "instruction.md"), "steps/"+st.Name+"/instruction.md")
		errs = appendErr(errs, err)
		s.Instruction = instr
		if d, err := seconds(key+".agent.timeout_sec", st.Agent.TimeoutSec); err != nil {
			errs = append(errs, err)
		} else {
			s.AgentTimeout = d
		}
		if d, err := seconds(key+".verifier.timeout_sec", st.Verifier.TimeoutSec); err != nil {
			errs = append(errs, err)
		} else {
			s.VerifierTimeout = d
		}
		e, err := resolveEnv(key+".verifier.env", st.Verifier.Env)
		errs = appendErr(errs, err)
		s.VerifierEnv = e
		if s.AgentUser, err = parseUser(key+".agent.user", st.Agent.User); err != nil {
			errs = append(errs, err)
		}
		if s.VerifierUser, err = parseUser(key+".verifier.user", st.Verifier.User); err != nil {
			errs = append(errs, err)
		}
		if s.MinReward, err = minReward(key+".min_reward", st.MinReward); err != nil {
			errs = append(errs, err)
		}
		if s.Artifacts, err = artifactPaths(key+".artifacts", st.Artifacts); err != nil {
			errs = append(errs, err)
		}
		if st.Healthcheck != nil {
			errs = append(errs, fmt.Errorf("task.toml %s.healthcheck is not supported: harnessd runs no healthchecks before the agent", key))
		}
		if st.Agent.NetworkMode != nil || len(st.Agent.AllowedHosts) > 0 {
			errs = append(errs, fmt.Errorf("task.toml %s.agent.network_mode is not supported: the harness's network is the environment's network: policy for the whole episode", key))
		}
		v := st.Verifier
		if v.EnvironmentMode != nil || v.Environment != nil {
			if mode := ptrOr(v.EnvironmentMode, "separate"); mode != modeName(t.Separate) {
				errs = append(errs, fmt.Errorf("task.toml %s.verifier.environment_mode is not supported: every step's verifier runs as the task's (%s)", key, modeName(t.Separate)))
			} else if v.Environment != nil {
				errs = append(errs, fmt.Errorf("task.toml %s.verifier.environment is not supported: the task's verifier environment serves every step", key))
			}
		}
		if v.NetworkMode != nil || len(v.AllowedHosts) > 0 {
			errs = append(errs, fmt.Errorf("task.toml %s.verifier.network_mode is not supported: the task's [verifier] network policy serves every step", key))
		}
		if len(v.Collect) > 0 {
			errs = append(errs, fmt.Errorf("task.toml %s.verifier.collect is not supported: collect hooks are not run", key))
		}
		if exists(filepath.Join(sd, "tests", "test.sh")) {
			s.testsDir = filepath.Join(sd, "tests")
		} else if !sharedTest {
			errs = append(errs, fmt.Errorf("step %s: no steps/%s/tests/test.sh and no tests/test.sh", st.Name, st.Name))
		}
		if exists(filepath.Join(sd, "solution", "solve.sh")) {
			s.solutionDir = filepath.Join(sd, "solution")
		}
		if fi, err := os.Stat(filepath.Join(sd, "workdir")); err == nil && fi.IsDir() {
			s.workdirDir = filepath.Join(sd, "workdir")
		}
		t.Steps = append(t.Steps, s)
	}
	if len(t.Steps) > 0 {
		t.Instruction = t.Steps[0].Instruction
	}
	return errs
}

func modeName(separate bool) string {
	if separate {
		return "separate"
	}
	return "shared"
}

func ptrOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// minReward reads a step's min_reward: a number gates "reward", a table
// gates each of its keys.
func minReward(key string, v any) (map[string]float64, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		return map[string]float64{"reward": float64(x)}, nil
	case float64:
		return map[string]float64{"reward": x}, nil
	case map[string]any:
		out := map[string]float64{}
		for k, e := range x {
			switch n := e.(type) {
			case int64:
				out[k] = float64(n)
			case float64:
				out[k] = n
			default:
				return nil, fmt.Errorf("%s.%s: want a number", key, k)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: want a number or a table of numbers", key)
}

// IsMultiStep reports whether the task has [[steps]].
func (t *Task) IsMultiStep() bool { return len(t.Steps) > 0 }

// StepResult is one step's outcome for the trial reward: its verifier's
// rewards (nil when the verifier produced none: a crash, no reward file,
// a setup that failed) and whether the step failed before or in its
// verifier.
type StepResult struct {
	// Name is the step's name.
	Name string
	// Rewards are the step's named rewards ("reward" for reward.txt or
	// reward.json's "reward"); nil: no verifier result.
	Rewards map[string]float64
	// Failed says the step ended in an exception (setup, agent, verifier).
	Failed bool
}

// Rewards maps a Result onto Harbor's verifier result: reward.json's
// scores with "reward" set to the reward, or {"reward": R}; nil without a
// reward.
func (r *Result) Rewards() map[string]float64 {
	if r == nil || r.Reward == nil {
		return nil
	}
	out := map[string]float64{}
	for k, v := range r.Scores {
		out[k] = v
	}
	out["reward"] = *r.Reward
	return out
}

// StopAfter reports whether the task ends after step i with result r, and
// why: a step that failed without a verifier result ends it, and so does a
// min_reward threshold that a named reward is below or missing from (as
// Harbor's MultiStepTrial._should_stop_after_step).
func (t *Task) StopAfter(i int, r StepResult) (bool, string) {
	if r.Failed && r.Rewards == nil {
		return true, fmt.Sprintf("step %s failed", r.Name)
	}
	keys := make([]string, 0, len(t.Steps[i].MinReward))
	for k := range t.Steps[i].MinReward {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		min := t.Steps[i].MinReward[k]
		got, ok := r.Rewards[k]
		if !ok {
			got = math.Inf(-1)
		}
		if got < min {
			return true, fmt.Sprintf("step %s: %s=%g below min_reward %g", r.Name, k, got, min)
		}
	}
	return false, ""
}

// TrialRewards is the task's reward from the steps that ran, as Harbor
// derives the trial's verifier result: "final" takes the last step's
// rewards as they are; "mean" takes, for each key any step produced, the
// mean over the steps (a missing key counts 0). Nil when no step produced
// one, and, unlike Harbor, when a step that ran produced none
// (Unrewarded): Harbor leaves such a step out of the mean, so an agent
// that cannot pass a step raised its trial's reward by making the step's
// verifier fail (its code under test writing the reward file, which the
// watch withholds, or killing the tests; a setup.sh it broke): 1 where
// the honest failure scores 0.5 (an outside red team).
func (t *Task) TrialRewards(rs []StepResult) map[string]float64 {
	if len(rs) == 0 {
		return nil
	}
	if t.StepStrategy == StrategyFinal {
		return rs[len(rs)-1].Rewards
	}
	if _, ok := Unrewarded(rs); ok {
		return nil
	}
	var valid []map[string]float64
	keys := map[string]bool{}
	for _, r := range rs {
		if r.Rewards != nil {
			valid = append(valid, r.Rewards)
			for k := range r.Rewards {
				keys[k] = true
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	out := map[string]float64{}
	for k := range keys {
		xs := make([]float64, len(valid))
		for i, v := range valid {
			xs[i] = v[k]
		}
		out[k] = FiniteMean(xs)
	}
	return out
}

// Unrewarded names the first step of rs that ran without producing a
// reward, if any.
func Unrewarded(rs []StepResult) (string, bool) {
	for _, r := range rs {
		if r.Rewards == nil {
			return r.Name, true
		}
	}
	return "", false
}

// NoTrialReward says why TrialRewards gave no reward for rs.
func NoTrialReward(rs []StepResult) string {
	if name, ok := Unrewarded(rs); ok {
		return fmt.Sprintf("step %s produced no reward, so the trial has none (left out of the mean, it would raise the trial's reward)", name)
	}
	return "no step produced a reward"
}

// stepAt returns step n (1-based) or an error.
func (t *Task) stepAt(n int) (*Step, error) {
	if n < 1 || n > len(t.Steps) {
		return nil, fmt.Errorf("task %s has %d steps, not a step %d", t.ID, len(t.Steps), n)
	}
	return &t.Steps[n-1], nil
}

// PrepareStep uploads step n's workdir/ (steps/NAME/workdir) into the
// workspace before its agent runs, over what earlier steps left (Harbor:
// "uploaded to the container's WORKDIR before the agent runs").
func (t *Task) PrepareStep(workspace string, n int) error {
	s, err := t.stepAt(n)
	if err != nil {
		return err
	}
	if s.workdirDir == "" {
		return nil
	}
	// The workspace is the live agent's: every path is resolved beneath
	// it (os.Root), never through a link it left out of it.
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return fmt.Errorf("task %s: step %s: upload workdir/: %w", t.ID, s.Name, err)
	}
	defer root.Close()
	if err := copyDirInto(s.workdirDir, root, "."); err != nil {
		return fmt.Errorf("task %s: step %s: upload workdir/: %w", t.ID, s.Name, err)
	}
	// A harness's sandbox owns the workspace between steps: the files
	// uploaded become its, as the workspace's root is.
	if fi, err := os.Stat(workspace); err == nil && os.Geteuid() == 0 {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
			if err := chownNew(s.workdirDir, root, int(st.Uid), int(st.Gid)); err != nil {
				return fmt.Errorf("task %s: step %s: upload workdir/: %w", t.ID, s.Name, err)
			}
		}
	}
	return nil
}

// allArtifacts are the task's artifacts and every step's.
func (t *Task) allArtifacts() []string {
	out := append([]string(nil), t.Artifacts...)
	for _, s := range t.Steps {
		out = append(out, s.Artifacts...)
	}
	return out
}

// chownNew gives the files of workspace that src's tree names (what
// PrepareStep copied) to uid:gid.
func chownNew(src string, workspace *os.Root, uid, gid int) error {
	return filepath.Walk(src, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		return workspace.Lchown(rel, uid, gid)
	})
}

// Turns is how many turns the Harbor task in dir takes: one per step of a
// multi-step task, else one (also when it does not load: the load's own
// error is reported where the taskset is).
func Turns(dir string) int {
	set, err := Load(Source{Task: dir})
	if err != nil || len(set.Tasks()[0].Steps) == 0 {
		return 1
	}
	return len(set.Tasks()[0].Steps)
}
