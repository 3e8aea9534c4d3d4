package evaljob

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// OracleRun is the oracle's run of one task: its solution, then its
// tests.
type OracleRun struct {
	// Solve is solution/solve.sh's run (its exit status does not stop the
	// grading: the tests judge what it left).
	Solve *tasks.Result
	// Grade is the tests' run.
	Grade *tasks.Result
}

// OracleError is an oracle run that could not happen; Stage says where
// it stopped: "prepare" (the workspace), "solve" or "grade".
type OracleError struct {
	Stage string
	Err   error
}

func (e *OracleError) Error() string { return e.Err.Error() }
func (e *OracleError) Unwrap() error { return e.Err }

// Oracle runs task t as Harbor's oracle agent does: a fresh workspace is
// prepared from the task under root (which must not exist or be empty;
// the caller removes it), solution/solve.sh runs in a sandbox with it at
// the task's WORKDIR (tasks.Task.Solve), then the tests grade it
// (tasks.Task.Grade). hide are further host paths covered inside both
// sandboxes. `harnessd run --task DIR --oracle` and the oracle trials of
// a job both run it.
func Oracle(ctx context.Context, t *tasks.Task, root string, hide []string) (*OracleRun, error) {
	if !t.HasSolution() {
		return nil, &OracleError{"prepare", fmt.Errorf("task %s has no solution/solve.sh", t.ID)}
	}
	ws := filepath.Join(root, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, &OracleError{"prepare", fmt.Errorf("oracle workspace: %w", err)}
	}
	if err := t.Prepare(ws); err != nil {
		return nil, &OracleError{"prepare", fmt.Errorf("task %s: prepare the workspace: %w", t.ID, err)}
	}
	run := &OracleRun{}
	var err error
	run.Solve, err = t.Solve(ctx, tasks.RunOptions{Workspace: ws, Scratch: filepath.Join(root, "solve"), Hide: hide})
	if err != nil {
		return run, &OracleError{"solve", err}
	}
	run.Grade, err = t.Grade(ctx, tasks.RunOptions{Workspace: ws, Scratch: filepath.Join(root, "grade"), Hide: hide})
	if err != nil {
		return run, &OracleError{"grade", err}
	}
	return run, nil
}

// TaskGrade is the wire form of a tests' result (as observations carry
// it).
func TaskGrade(res *tasks.Result) *wire.TaskGrade {
	g := &wire.TaskGrade{Reward: res.Reward, Scores: res.Scores, Exit: &wire.ExitStatus{Code: res.ExitCode, Signal: res.Signal},
		TimedOut: res.TimedOut, Limit: res.Limit, StdoutTail: res.Stdout, StderrTail: res.Stderr,
		DurationMS: float64(res.Duration.Microseconds()) / 1000, Error: res.Error, RewardWatch: res.RewardWatch}
	for _, w := range res.Tampered {
		g.Tampered = append(g.Tampered, wire.RewardWriter{File: w.File, Pid: w.Pid, Command: w.Command, Events: w.Events})
	}
	return g
}

// runSummary is the wire-like form of solve.sh's run.
func runSummary(res *tasks.Result) *RunSummary {
	return &RunSummary{Exit: &wire.ExitStatus{Code: res.ExitCode, Signal: res.Signal}, TimedOut: res.TimedOut,
		StdoutTail: res.Stdout, StderrTail: res.Stderr, DurationMS: float64(res.Duration.Microseconds()) / 1000}
}
