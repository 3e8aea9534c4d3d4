package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// ErrNoTaskset is returned by Reset for a task choice (task_id,
// task_index) in an environment without tasks:.
var ErrNoTaskset = errors.New("the environment serves no taskset (tasks: is not configured)")

// pickTask picks the episode's task when the environment has a taskset
// (nil without one).
func (s *Session) pickTask(opts ResetOptions) (*tasks.Task, error) {
	set := s.cfg.Taskset()
	if set == nil {
		if opts.TaskID != "" || opts.TaskIndex != nil {
			return nil, ErrNoTaskset
		}
		return nil, nil
	}
	return set.Pick(tasks.Choice{ID: opts.TaskID, Index: opts.TaskIndex, Seed: opts.Seed})
}

// taskStarted applies the task's episode budget ([agent] timeout_sec,
// when shorter than episode.episode_timeout) and puts the task into the
// reset observation.
func (s *Session) taskStarted(r *run, md *wire.Metadata) {
	t := r.ep.Task()
	if t == nil {
		return
	}
	if t.AgentTimeout > 0 {
		s.mu.Lock()
		if dl := time.Now().Add(t.AgentTimeout); r.deadline.IsZero() || dl.Before(r.deadline) {
			r.deadline = dl
			r.budget = t.AgentTimeout
		}
		s.mu.Unlock()
	}
	md.TaskID, md.TaskInstruction, md.TaskMetadata = t.ID, t.Instruction, t.Metadata
}

// episodeBudget is the episode's wall-clock budget for messages.
func (s *Session) episodeBudget(r *run) units.Duration {
	if r.budget > 0 {
		return units.Duration(r.budget)
	}
	return s.cfg.Episode.EpisodeTimeout
}

// turnMessage is what turn n delivers: the trainer's message, or the
// task's instruction when the first turn's message is empty.
func (s *Session) turnMessage(r *run, n int, msg string) string {
	if t := r.ep.Task(); msg == "" && n == 1 && t != nil {
		return t.Instruction
	}
	return msg
}

// SubmitKey is the action metadata key that ends a task episode after its
// turn: {"message": "...", "metadata": {"submit": true}}.
const SubmitKey = "submit"

// submitted reports a step that asks to end the task episode and grade it.
func submitted(r *run, a wire.Action) bool {
	v, ok := a.Metadata[SubmitKey].(bool)
	return r.ep.Task() != nil && ok && v
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
func (s *Session) gradeTask(ctx context.Context, r *run, obs *wire.Observation) {
	ep := r.ep
	t := ep.Task()
	if t == nil || !obs.Done || r.graded {
		return
	}
	if f := obs.Metadata.ErrorType; f != "" && !slices.Contains(gradedFailures, f) {
		return
	}
	r.graded = true
	tctx, cancel := teardown(ctx)
	ep.StopHarness(tctx)
	cancel()
	scratch := filepath.Join(ep.Dirs().Root, "grade")
	defer os.RemoveAll(scratch)
	start := time.Now()
	l := s.cfg.Limits
	res, err := t.Grade(ctx, tasks.RunOptions{Workspace: ep.Dirs().Workspace, Scratch: scratch, Hide: s.gradeHide(),
		Limits: sandbox.Limits{MemoryBytes: int64(l.Memory), Pids: l.Pids, CPU: l.CPU}})
	g := &wire.TaskGrade{DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		g.Error = err.Error()
	} else {
		g.Reward, g.Scores, g.TimedOut, g.Limit, g.Error = res.Reward, res.Scores, res.TimedOut, res.Limit, res.Error
		g.Exit = &wire.ExitStatus{Code: res.ExitCode, Signal: res.Signal}
		g.StdoutTail, g.StderrTail = res.Stdout, res.Stderr
		g.RewardWatch = res.RewardWatch
		for _, w := range res.Tampered {
			g.Tampered = append(g.Tampered, wire.RewardWriter{File: w.File, Pid: w.Pid, Command: w.Command, Events: w.Events})
		}
		if len(g.Tampered) > 0 {
			ep.Log().Warn("task reward withheld: written by a process other than the tests'", "writers", g.Tampered)
		}
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
	ep.Log().Info("task graded", "reward", rewardValue(g.Reward), "elapsed", time.Since(start), "error", g.Error)
}

// gradeHide are the daemon's directories the tests must not see.
func (s *Session) gradeHide() []string {
	out := []string{s.cfg.WorkspaceRoot()}
	if s.cfg.RecordDir != "" {
		out = append(out, s.cfg.RecordDir)
	}
	return out
}
