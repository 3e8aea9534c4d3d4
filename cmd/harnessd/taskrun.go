package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/internal/termtext"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// taskErrorLines expands a configuration error holding a broken taskset
// into one line per broken task ("tasks: task ID: REASON"); ok is false
// when err holds none.
func taskErrorLines(path string, err error) ([]string, bool) {
	var le *tasks.LoadError
	if !errors.As(err, &le) {
		return nil, false
	}
	var out []string
	for _, l := range configErrorLines(path, withoutTasks{err}) {
		if !strings.HasPrefix(l, "tasks: ") {
			out = append(out, l)
		}
	}
	for _, p := range le.Problems {
		out = append(out, "tasks: "+p.String())
	}
	return out, true
}

// withoutTasks hides the *tasks.LoadError of an error from
// taskErrorLines, so that configErrorLines splits its text.
type withoutTasks struct{ err error }

func (w withoutTasks) Error() string { return w.err.Error() }

// taskSummary is what run --task prints on stdout.
type taskSummary struct {
	TaskID string          `json:"task_id"`
	Oracle bool            `json:"oracle,omitempty"`
	Reward *float64        `json:"reward"`
	Grade  *wire.TaskGrade `json:"grade,omitempty"`
	Error  string          `json:"error,omitempty"`
	// ErrorType classifies a run that could not be graded here
	// (grader_needs_network), or the episode's failure.
	ErrorType wire.FailureType `json:"error_type,omitempty"`
}

// printTaskSummary prints the reward line on stderr (a harness's or a
// grader's text in it escaped: termtext) and the summary as JSON on
// stdout, and returns run's exit code: 0 when the task was graded.
func printTaskSummary(s taskSummary) int {
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	out.Encode(s)
	switch {
	case s.Reward != nil:
		fmt.Fprintf(os.Stderr, "task %s: reward %g\n", termtext.Escape(s.TaskID), *s.Reward)
		return exitOK
	case s.ErrorType != "" && s.Grade != nil:
		fmt.Fprintf(os.Stderr, "task %s: no reward (error_type %s): %s\n", termtext.Escape(s.TaskID), s.ErrorType, termtext.Escape(s.Grade.Error))
	case s.Error != "":
		fmt.Fprintf(os.Stderr, "task %s: no reward: %s\n", termtext.Escape(s.TaskID), termtext.Escape(s.Error))
	case s.Grade != nil && s.Grade.Error != "":
		fmt.Fprintf(os.Stderr, "task %s: no reward: %s\n", termtext.Escape(s.TaskID), termtext.Escape(s.Grade.Error))
	default:
		fmt.Fprintf(os.Stderr, "task %s: not graded\n", termtext.Escape(s.TaskID))
	}
	return exitFailure
}

// runOracle is run --task DIR|ID --oracle: the task's workspace is prepared
// in a temporary directory, solution/solve.sh runs in a sandbox with it at
// the task's working directory as the task's agent user, then the tests
// grade it; a multi-step task runs each step's workdir/, setup.sh,
// solve.sh and tests in order (tasks.Task.Oracle). The tests may use the
// egress proxy eg makes (nil: none; the configuration's network.egress:
// allow) where the task's verifier network allows. It exits 0 only for a
// reward of 1; tests that needed a network they did not have print
// error_type grader_needs_network and exit 1.
func runOracle(ctx context.Context, t *tasks.Task, eg *egress.Options) int {
	for _, w := range t.Warnings {
		fmt.Fprintf(os.Stderr, "task %s: %s\n", termtext.Escape(t.ID), termtext.Escape(w))
	}
	if !t.HasSolution() && !t.IsMultiStep() {
		fmt.Fprintf(os.Stderr, "harnessd run: --oracle: task %s has no solution/solve.sh\n", termtext.Escape(t.ID))
		return exitUsage
	}
	root, err := os.MkdirTemp("", "harnessd-oracle-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd run:", err)
		return exitFailure
	}
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "harnessd run:", err)
		return exitFailure
	}
	sum := taskSummary{TaskID: t.ID, Oracle: true}
	tr, err := t.Oracle(ctx, tasks.RunOptions{Workspace: ws, Scratch: filepath.Join(root, "runs"), Egress: eg})
	if err != nil {
		sum.Error = err.Error()
		return printTaskSummary(sum)
	}
	solves := []*tasks.Result{tr.Solve}
	for _, s := range tr.Steps {
		solves = append(solves, s.Solve)
		if s.Error != "" {
			fmt.Fprintf(os.Stderr, "task %s: %s\n", termtext.Escape(t.ID), termtext.Escape(s.Error))
		}
	}
	for _, sol := range solves {
		if sol != nil && (sol.ExitCode != 0 || sol.TimedOut) {
			fmt.Fprintf(os.Stderr, "task %s: solve.sh exited with code %d (timed out: %v); stderr:\n%s\n", termtext.Escape(t.ID), sol.ExitCode, sol.TimedOut, termtext.Lines(sol.Stderr, "  | "))
		}
	}
	if tr.Stopped != "" {
		fmt.Fprintf(os.Stderr, "task %s: stopped early: %s\n", termtext.Escape(t.ID), termtext.Escape(tr.Stopped))
	}
	sum.Reward, sum.Grade, sum.ErrorType = tr.Reward, tr.WireGrade(), wire.FailureType(tr.ErrorType)
	code := printTaskSummary(sum)
	if code == exitOK && *sum.Reward < 1 {
		// The reference solution must solve its task: a task author's CI
		// runs the oracle to catch a broken solution or broken tests.
		fmt.Fprintf(os.Stderr, "task %s: the oracle scored %g, below 1: the solution or the tests are broken\n", termtext.Escape(t.ID), *sum.Reward)
		return exitFailure
	}
	return code
}

// taskConfig points cfg at the one task of run --task; an episode of one
// turn unless the configuration or --max-turns says otherwise.
func taskConfig(cfg *config.Config, dir string) error {
	cfg.Tasks = tasks.Source{Task: dir}
	if cfg.Episode.MaxTurns == 0 {
		cfg.Episode.MaxTurns = taskTurns(dir)
	}
	return cfg.Normalize()
}

// taskTurns is how many turns the task in dir takes (tasks.Turns).
func taskTurns(dir string) int { return tasks.Turns(dir) }

// taskResult summarizes the final observation of a run --task episode.
func taskResult(obs *wire.Observation) int {
	sum := taskSummary{TaskID: obs.Metadata.TaskID, Reward: obs.Reward, Grade: obs.Metadata.Grade}
	if sum.Grade != nil {
		sum.ErrorType = sum.Grade.ErrorType
	}
	if sum.Grade == nil {
		sum.Error = "the episode ended without grading"
		if obs.Metadata.ErrorType != "" {
			sum.Error += fmt.Sprintf(" (%s: %s)", obs.Metadata.ErrorType, obs.Metadata.Error)
		} else if !obs.Done {
			sum.Error = "the episode did not end (give more -m turns or lower --max-turns)"
		}
	}
	return printTaskSummary(sum)
}

// taskSource is --tasks PATH: a .jsonl file, a .parquet shard (default
// columns), or a directory of tasks.
func taskSource(p string) tasks.Source {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		if strings.HasSuffix(p, ".parquet") {
			return tasks.Source{Parquet: p} // a dataset's shard, default columns
		}
		return tasks.Source{JSONL: p}
	}
	return tasks.Source{Dir: p}
}
