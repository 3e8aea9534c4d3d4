package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// ErrNoTaskset is returned by Reset for a task choice (task_id,
// task_index) in an environment without tasks:.
var ErrNoTaskset = errors.New("the environment serves no taskset (tasks: is not configured)")

// prepareTask picks the episode's task (when the environment has a
// taskset) and fills the workspace with its environment files.
func (s *Session) prepareTask(ep *episode, opts ResetOptions) error {
	set := s.cfg.Taskset()
	if set == nil {
		if opts.TaskID != "" || opts.TaskIndex != nil {
			return ErrNoTaskset
		}
		return nil
	}
	t, err := set.Pick(tasks.Choice{ID: opts.TaskID, Index: opts.TaskIndex, Seed: opts.Seed})
	if err != nil {
		return err
	}
	if err := t.Prepare(ep.dirs.workspace); err != nil {
		return err
	}
	ep.task = t
	ep.log = ep.log.With("task_id", t.ID)
	return nil
}

// taskLaunch gives the harness the task's ENV.
func (s *Session) taskLaunch(ep *episode, l *harness.Launch) {
	t := ep.task
	if t == nil {
		return
	}
	for _, kv := range t.Env {
		l.Env = setEnv(l.Env, kv)
	}
}

// setEnv replaces or appends one KEY=VALUE.
func setEnv(env []string, kv string) []string {
	k, _, _ := cutEnv(kv)
	for i, e := range env {
		if ek, _, _ := cutEnv(e); ek == k {
			env[i] = kv
			return env
		}
	}
	return append(env, kv)
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// taskStarted applies the task's episode budget ([agent] timeout_sec,
// when shorter than episode.episode_timeout) and puts the task into the
// reset observation.
func (s *Session) taskStarted(ep *episode, md *wire.Metadata) {
	t := ep.task
	if t == nil {
		return
	}
	if t.AgentTimeout > 0 {
		if dl := time.Now().Add(t.AgentTimeout); ep.deadline.IsZero() || dl.Before(ep.deadline) {
			ep.deadline = dl
			ep.budget = t.AgentTimeout
		}
	}
	md.TaskID, md.TaskInstruction, md.TaskMetadata = t.ID, t.Instruction, t.Metadata
}

// episodeBudget is the episode's wall-clock budget for messages.
func (s *Session) episodeBudget(ep *episode) units.Duration {
	if ep.budget > 0 {
		return units.Duration(ep.budget)
	}
	return s.cfg.Episode.EpisodeTimeout
}

// turnMessage is what turn n delivers: the trainer's message, or the
// task's instruction when the first turn's message is empty.
func (s *Session) turnMessage(ep *episode, n int, msg string) string {
	if msg == "" && n == 1 && ep.task != nil {
		return ep.task.Instruction
	}
	return msg
}

// SubmitKey is the action metadata key that ends a task episode after its
// turn: {"message": "...", "metadata": {"submit": true}}.
const SubmitKey = "submit"

// submitted reports a step that asks to end the task episode and grade it.
func submitted(ep *episode, a wire.Action) bool {
	v, ok := a.Metadata[SubmitKey].(bool)
	return ep.task != nil && ok && v
}

// gradedFailures are the failures after which a task is still graded: the
// agent's work is in the workspace whatever stopped it. A cancelled turn
// (client gone, shutdown) and a failed start are not graded.
var gradedFailures = []wire.FailureType{
	wire.FailureTurnTimeout, wire.FailureEpisodeTimeout, wire.FailureHarnessCrashed, wire.FailureHarnessExited,
	wire.FailureProtocol, wire.FailureOutputLimit, wire.FailureModelBudget, wire.FailureResourceLimit, wire.FailureMaxTurns,
}

// gradeTask grades the episode's task when obs ends the episode: the
// harness is stopped first, then the task's tests run (tasks.Task.Grade)
// against the workspace, and their reward is added to obs's (a "tests"
// reward detail beside the rubrics').
func (s *Session) gradeTask(ctx context.Context, ep *episode, obs *wire.Observation) {
	t := ep.task
	if t == nil || !obs.Done || ep.graded {
		return
	}
	if f := obs.Metadata.ErrorType; f != "" && !slices.Contains(gradedFailures, f) {
		return
	}
	ep.graded = true
	tctx, cancel := teardown(ctx)
	s.adapter.Stop(tctx)
	cancel()
	scratch := filepath.Join(ep.dirs.root, "grade")
	defer os.RemoveAll(scratch)
	start := time.Now()
	res, err := t.Grade(ctx, tasks.RunOptions{Workspace: ep.dirs.workspace, Scratch: scratch, Hide: s.gradeHide()})
	g := &wire.TaskGrade{DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		g.Error = err.Error()
	} else {
		g.Reward, g.Scores, g.TimedOut, g.Limit, g.Error = res.Reward, res.Scores, res.TimedOut, res.Limit, res.Error
		g.Exit = &wire.ExitStatus{Code: res.ExitCode, Signal: res.Signal}
		g.StdoutTail, g.StderrTail = res.Stdout, res.Stderr
	}
	obs.Metadata.TaskID, obs.Metadata.Grade = t.ID, g
	obs.Metadata.RewardDetails = append(obs.Metadata.RewardDetails, wire.RewardDetail{Name: "tests", Type: "task", Weight: 1, Score: g.Reward, Error: g.Error})
	if g.Reward != nil {
		total := *g.Reward
		if obs.Reward != nil {
			total += *obs.Reward
		}
		obs.Reward = &total
	}
	ep.log.Info("task graded", "reward", rewardValue(g.Reward), "elapsed", time.Since(start), "error", g.Error)
}

// gradeHide are the daemon's directories the tests must not see.
func (s *Session) gradeHide() []string {
	out := []string{s.cfg.WorkspaceRoot()}
	if s.cfg.RecordDir != "" {
		out = append(out, s.cfg.RecordDir)
	}
	return out
}

// taskTools maps the task's mcp_servers onto per-episode tool sources:
// stdio servers by command, streamable-HTTP ones by URL (SSE is not
// served; the task's warnings say so).
func (s *Session) taskTools(ep *episode) []config.ToolConfig {
	if ep.task == nil {
		return nil
	}
	var out []config.ToolConfig
	for _, m := range ep.task.MCPServers {
		tc := config.ToolConfig{Name: "task-" + m.Name, CallTimeout: units.Duration(config.DefaultToolTimeout), PerEpisode: true, Dir: ep.dirs.workspace}
		switch {
		case m.Command != "" && (m.Transport == "" || m.Transport == "stdio"):
			tc.Command = append([]string{m.Command}, m.Args...)
		case m.URL != "" && (m.Transport == "streamable-http" || m.Transport == "http"):
			tc.URL = m.URL
		default:
			continue
		}
		out = append(out, tc)
	}
	return out
}
