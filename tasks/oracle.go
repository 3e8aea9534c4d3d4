package tasks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/harnessd/harnessd/wire"
)

// StepRun is one step of an oracle trial: what its setup, solution and
// tests did.
type StepRun struct {
	// Name is the step's name.
	Name string
	// Setup, Solve and Grade are the runs of workdir/setup.sh, solve.sh
	// and the tests (nil when they did not run).
	Setup, Solve, Grade *Result
	// Error says why the step failed before a verifier result (setup.sh
	// exited non-zero, a run could not start).
	Error string
}

// Trial is a task run through by its reference solutions: a single-step
// task's solve.sh then its tests, or each step of a multi-step task in
// order (workdir/ uploaded, setup.sh, solve.sh, the step's tests) until
// the last or until one stops the task (Task.StopAfter).
type Trial struct {
	// Reward is the task's reward: the tests' (single step), or "reward"
	// of the trial's rewards (Task.TrialRewards); nil when there is none.
	Reward *float64
	// Scores are the trial's named rewards (multi-step), or reward.json's.
	Scores map[string]float64
	// Grade is a single-step task's grading run.
	Grade *Result
	// Solve is a single-step task's solve.sh run.
	Solve *Result
	// Steps are a multi-step task's steps that ran.
	Steps []StepRun
	// Stopped says why a multi-step task ended before its last step.
	Stopped string
	// ErrorType is FailureGraderNeedsNetwork when a grading run needed the
	// network (the reward is then nil), "" otherwise.
	ErrorType string
	// Error says why there is no reward.
	Error string
}

// Oracle prepares the workspace o.Workspace (an empty directory) from the
// task, then runs the task's reference solutions and tests as a Harbor
// oracle trial does. Each run gets a scratch directory of its own under
// o.Scratch. Its error is for runs that could not happen at all.
func (t *Task) Oracle(ctx context.Context, o RunOptions) (*Trial, error) {
	if err := t.Prepare(o.Workspace); err != nil {
		return nil, err
	}
	root := o.Scratch
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("task %s: scratch: %w", t.ID, err)
	}
	at := func(name string) RunOptions {
		r := o
		r.Scratch = filepath.Join(root, name)
		return r
	}
	tr := &Trial{}
	if !t.IsMultiStep() {
		if !t.HasSolution() {
			return nil, fmt.Errorf("task %s has no solution/solve.sh", t.ID)
		}
		sol, err := t.Solve(ctx, at("solve"))
		if err != nil {
			return nil, err
		}
		tr.Solve = sol
		g, err := t.Grade(ctx, at("grade"))
		if err != nil {
			return nil, err
		}
		tr.Grade, tr.Reward, tr.Scores, tr.ErrorType, tr.Error = g, g.Reward, g.Scores, g.ErrorType, g.Error
		return tr, nil
	}
	for i := range t.Steps {
		if !t.Steps[i].HasSolution() {
			return nil, fmt.Errorf("task %s: step %s has no solution/solve.sh", t.ID, t.Steps[i].Name)
		}
	}
	var results []StepResult
	for i := range t.Steps {
		n, s := i+1, &t.Steps[i]
		o.Step = n
		sr := StepRun{Name: s.Name}
		res := StepResult{Name: s.Name}
		if err := t.PrepareStep(o.Workspace, n); err != nil {
			return nil, err
		}
		setup, err := t.Setup(ctx, at(fmt.Sprintf("step%d-setup", n)))
		switch {
		case err != nil:
			return nil, err
		case setup != nil && (setup.ExitCode != 0 || setup.TimedOut):
			sr.Setup, sr.Error, res.Failed = setup, fmt.Sprintf("step %s: setup.sh exited with code %d", s.Name, setup.ExitCode), true
		default:
			sr.Setup = setup
			if sr.Solve, err = t.Solve(ctx, at(fmt.Sprintf("step%d-solve", n))); err != nil {
				return nil, err
			}
			if sr.Grade, err = t.Grade(ctx, at(fmt.Sprintf("step%d-grade", n))); err != nil {
				return nil, err
			}
			res.Rewards = sr.Grade.Rewards()
			res.Failed = res.Rewards == nil
			if sr.Grade.ErrorType != "" {
				tr.ErrorType, tr.Error = sr.Grade.ErrorType, fmt.Sprintf("step %s: %s", s.Name, sr.Grade.Error)
			}
		}
		tr.Steps = append(tr.Steps, sr)
		results = append(results, res)
		if stop, why := t.StopAfter(i, res); stop {
			if n < len(t.Steps) {
				tr.Stopped = why
			}
			break
		}
	}
	if tr.ErrorType != "" {
		return tr, nil // a step could not be graded here: no task reward
	}
	tr.Scores = t.TrialRewards(results)
	if r, ok := rewardOf(tr.Scores); ok {
		tr.Reward = &r
	} else {
		tr.Error = NoTrialReward(results)
	}
	return tr, nil
}

// rewardOf is a rewards map's scalar: its "reward", else the mean of its
// values (as a reward.json without "reward" is read).
func rewardOf(m map[string]float64) (float64, bool) {
	if len(m) == 0 {
		return 0, false
	}
	if r, ok := m["reward"]; ok {
		return r, true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sum := 0.0
	for _, k := range keys {
		sum += m[k]
	}
	return sum / float64(len(m)), true
}

// TrialReward is rewards' scalar (Task.TrialRewards' result): "reward",
// else the mean of its values; false without one.
func TrialReward(rewards map[string]float64) (float64, bool) { return rewardOf(rewards) }

// WireGrade is r as the observation's metadata.grade.
func (r *Result) WireGrade() *wire.TaskGrade {
	if r == nil {
		return nil
	}
	g := &wire.TaskGrade{Reward: r.Reward, Scores: r.Scores, Exit: &wire.ExitStatus{Code: r.ExitCode, Signal: r.Signal},
		TimedOut: r.TimedOut, Limit: r.Limit, StdoutTail: r.Stdout, StderrTail: r.Stderr,
		DurationMS: float64(r.Duration.Microseconds()) / 1000, Error: r.Error, RewardWatch: r.RewardWatch,
		ErrorType: wire.FailureType(r.ErrorType)}
	for _, w := range r.Tampered {
		g.Tampered = append(g.Tampered, wire.RewardWriter{File: w.File, Pid: w.Pid, Command: w.Command, Events: w.Events})
	}
	return g
}

// WireGrade is the trial as metadata.grade: a single step's grade, or the
// task's reward with one grade per step.
func (tr *Trial) WireGrade() *wire.TaskGrade {
	if tr.Grade != nil {
		return tr.Grade.WireGrade()
	}
	g := &wire.TaskGrade{Reward: tr.Reward, Scores: tr.Scores, Error: tr.Error, ErrorType: wire.FailureType(tr.ErrorType), Stopped: tr.Stopped}
	for _, s := range tr.Steps {
		sg := s.Grade.WireGrade()
		if sg == nil {
			sg = &wire.TaskGrade{Error: s.Error}
		}
		sg.Step = s.Name
		g.DurationMS += sg.DurationMS
		g.Steps = append(g.Steps, *sg)
	}
	return g
}
