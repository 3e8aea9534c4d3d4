package evaljob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/atif"
	"github.com/harnessd/harnessd/internal/recordfile"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// trial is one planned trial: an agent's attempt at a task.
type trial struct {
	name    string
	agent   int // index into Spec.Agents
	source  int // index into Spec.Tasks: the taskset holding task
	task    *tasks.Task
	attempt int
}

// maxSteps bounds the turns of one agent trial: the first step sends the
// task's instruction, each after it an empty message (the task's next instruction, for tasks of
// several steps); the configuration's episode.max_turns (1 unless set)
// normally ends the episode first.
const maxSteps = 64

// closeTimeout bounds ending a trial's session after its episode.
const closeTimeout = 30 * time.Second

// runAgent runs an agent trial: a session of its own whose one episode is
// reset onto the task, stepped with the task's instruction, and graded by
// the session; then the record and export are moved into dir and the
// trajectory made from them. It returns nil when ctx ended the trial
// before it finished (it has no result then, and a resume runs it).
func (r *runner) runAgent(ctx context.Context, t trial, cfg *config.Config, dir string) *Result {
	res := &Result{}
	sess, err := session.NewSession(session.Options{Config: cfg, Adapters: r.o.Adapters, Supervisor: r.o.Supervisor,
		Logger: r.o.Logger, Isolation: r.o.Isolation, Hide: r.hide()})
	if err != nil {
		res.ErrorType, res.Error = ErrSetup, err.Error()
		return res
	}
	obs, err := r.episode(ctx, sess, t)
	cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	closeErr := sess.Close(cctx)
	cancel()
	if ctx.Err() != nil {
		return nil
	}
	switch {
	case err != nil && obs == nil:
		res.ErrorType, res.Error = ErrReset, err.Error()
	case err != nil:
		res.ErrorType, res.Error = ErrStep, err.Error()
	default:
		classify(res, obs)
	}
	if err := r.keepEpisodeFiles(res, cfg.RecordDir, t.name, dir); err != nil && res.ErrorType == "" {
		res.ErrorType, res.Error = ErrArtifacts, err.Error()
	}
	if closeErr != nil {
		r.o.Logger.Warn("trial session closed uncleanly", "trial", t.name, "err", closeErr)
	}
	return res
}

// episode resets sess onto t's task and steps it until the episode ends.
// A reset error returns no observation, a step error the reset's.
func (r *runner) episode(ctx context.Context, sess *session.Session, t trial) (*wire.Observation, error) {
	obs, err := sess.Reset(ctx, session.ResetOptions{EpisodeID: t.name, TaskID: t.task.ID})
	if err != nil {
		return nil, fmt.Errorf("reset: %w", err)
	}
	for i := 0; !obs.Done && i < maxSteps; i++ {
		var a wire.Action
		if i == 0 {
			a.Message = t.task.Instruction // what an empty message delivers, kept in the record
		}
		next, err := sess.Step(ctx, a, nil)
		if err != nil {
			return obs, fmt.Errorf("step %d: %w", i+1, err)
		}
		obs = next
	}
	return obs, nil
}

// classify fills res from the episode's last observation: the tests'
// reward (not the rubrics', which a configuration may add), and why there
// is none.
func classify(res *Result, obs *wire.Observation) {
	md := &obs.Metadata
	res.Grade = md.Grade
	res.ErrorType, res.Error = string(md.ErrorType), md.Error
	switch g := md.Grade; {
	case g != nil && g.Reward != nil:
		res.Reward = g.Reward
	case g != nil && g.ErrorType != "":
		res.ErrorType, res.Error = string(g.ErrorType), g.Error // grader_needs_network
	case g != nil:
		res.ErrorType, res.Error = ErrNoReward, g.Error
	case !obs.Done:
		res.ErrorType, res.Error = ErrNotGraded, fmt.Sprintf("the episode did not end after %d turns", maxSteps)
	case res.ErrorType == "":
		res.ErrorType, res.Error = ErrNotGraded, "the episode ended without grading"
	}
}

// keepEpisodeFiles moves the episode's record and training export from
// the record directory into the trial's directory and writes the ATIF
// trajectory made from them (and the tokens it counts into res).
func (r *runner) keepEpisodeFiles(res *Result, recordDir, episode, dir string) error {
	record := filepath.Join(dir, "record.jsonl")
	if err := os.Rename(recordfile.Record(recordDir, episode), record); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // no episode was recorded (its session failed)
		}
		return fmt.Errorf("keep the record: %w", err)
	}
	res.Files = append(res.Files, "record.jsonl")
	export := filepath.Join(dir, "record.export.json")
	switch err := os.Rename(recordfile.Export(recordDir, episode), export); {
	case err == nil:
		res.Files = append(res.Files, "record.export.json")
	case errors.Is(err, fs.ErrNotExist):
		export = "" // evaluation traffic, or no model calls: no export
	default:
		return fmt.Errorf("keep the training export: %w", err)
	}
	recs, ex, err := atif.ReadFiles(record, export)
	if err != nil {
		return fmt.Errorf("trajectory: %w", err)
	}
	tr, err := atif.Convert(recs, ex, atif.Options{HarnessdVersion: r.o.Version})
	if err != nil {
		return fmt.Errorf("trajectory: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, "trajectory.json"), tr); err != nil {
		return fmt.Errorf("trajectory: %w", err)
	}
	res.Files = append(res.Files, "trajectory.json")
	if fm := tr.FinalMetrics; fm != nil && (fm.TotalPromptTokens != nil || fm.TotalCompletionTokens != nil) {
		res.Tokens = &Tokens{}
		if fm.TotalPromptTokens != nil {
			res.Tokens.Prompt = *fm.TotalPromptTokens
		}
		if fm.TotalCompletionTokens != nil {
			res.Tokens.Completion = *fm.TotalCompletionTokens
		}
	}
	return nil
}
