package evaljob

import (
	"context"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// runOracle runs an oracle trial: the task run through by its reference
// solutions as Harbor's oracle agent does (tasks.Task.Oracle, which
// `harnessd run --task DIR --oracle` runs too), in a scratch directory of
// the trial's own. It returns nil when ctx ended it first.
func (r *runner) runOracle(ctx context.Context, t trial) *Result {
	res := &Result{}
	root, err := os.MkdirTemp(r.scratch, "oracle-")
	if err != nil {
		res.ErrorType, res.Error = ErrOracle, err.Error()
		return res
	}
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		res.ErrorType, res.Error = ErrOracle, err.Error()
		return res
	}
	tr, err := t.task.Oracle(ctx, tasks.RunOptions{Workspace: ws, Scratch: filepath.Join(root, "runs"), Hide: r.hide()})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		res.ErrorType, res.Error = ErrOracle, err.Error()
		return res
	}
	res.Grade = tr.WireGrade()
	if tr.Solve != nil {
		res.Solve = append(res.Solve, runSummary("", tr.Solve))
	}
	for _, s := range tr.Steps {
		if s.Solve != nil {
			res.Solve = append(res.Solve, runSummary(s.Name, s.Solve))
		}
	}
	switch {
	case tr.Reward != nil:
		res.Reward = tr.Reward
	case tr.ErrorType != "":
		res.ErrorType, res.Error = tr.ErrorType, tr.Error // grader_needs_network
	default:
		res.ErrorType, res.Error = ErrNoReward, tr.Error
	}
	return res
}

// runSummary is the wire-like form of a solve.sh run (of step, for a
// task of several steps).
func runSummary(step string, res *tasks.Result) *RunSummary {
	return &RunSummary{Step: step, Exit: &wire.ExitStatus{Code: res.ExitCode, Signal: res.Signal}, TimedOut: res.TimedOut,
		StdoutTail: res.Stdout, StderrTail: res.Stderr, DurationMS: float64(res.Duration.Microseconds()) / 1000}
}
