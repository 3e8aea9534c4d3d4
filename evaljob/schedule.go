package evaljob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/harnessd/harnessd/internal/recordfile"
)

// runAll runs every trial without a result, Concurrency at once, and
// returns how many it ran to a result.
func (r *runner) runAll(ctx context.Context) (int, error) {
	var todo []trial
	for _, t := range r.plan {
		if r.done[t.name] == nil {
			todo = append(todo, t)
		}
	}
	r.progress = Progress{Total: len(r.plan), Started: time.Now()}
	for _, res := range r.done {
		r.progress.Done++
		r.progress.Resumed++
		r.count(res)
	}
	r.report(r.progress)
	queue := make(chan trial)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	ran := 0
	for range min(r.o.Concurrency, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range queue {
				ok, err := r.runTrial(ctx, t)
				mu.Lock()
				if ok {
					ran++
				}
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, t := range todo {
		select {
		case queue <- t:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("job interrupted: %w", ctx.Err()))
	}
	return ran, errors.Join(errs...)
}

// runTrial runs one trial, retrying it as the policy says, and keeps its
// result: result.json (and grade.json, solve.json) in its directory, then
// its line in results.jsonl. ok is false when ctx ended it first (it then
// has no result); err is a result that could not be written.
func (r *runner) runTrial(ctx context.Context, t trial) (ok bool, err error) {
	dir := filepath.Join(r.o.Dir, trialsDir, t.name)
	r.started(1)
	defer r.started(-1)
	var prev []string
	for try := 0; ; try++ {
		if err := r.cleanTrial(dir, t); err != nil {
			return false, err
		}
		start := time.Now()
		var res *Result
		if a := r.o.Spec.Agents[t.agent]; a.Oracle {
			res = r.runOracle(ctx, t)
		} else {
			res = r.runAgent(ctx, t, r.cfgs[[2]int{t.agent, t.source}], dir)
		}
		if res == nil {
			return false, nil
		}
		res.Trial, res.Agent, res.Task, res.Attempt = t.name, r.o.Spec.Agents[t.agent].Name, t.task.ID, t.attempt
		res.Started, res.Finished = start.UTC(), time.Now().UTC()
		res.DurationMS = float64(res.Finished.Sub(start).Microseconds()) / 1000
		res.Retries, res.PreviousErrors = try, prev
		if r.o.Retry.retry(res, try) {
			r.o.Logger.Warn("retrying trial", "trial", t.name, "error_type", res.ErrorType, "error", res.Error, "retry", try+1)
			prev = append(prev, res.ErrorType)
			continue
		}
		return true, r.keep(dir, res)
	}
}

// cleanTrial empties the trial's directory (a try interrupted or retried
// leaves files) and removes its episode's files from the record directory.
func (r *runner) cleanTrial(dir string, t trial) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("trial %s: %w", t.name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("trial %s: %w", t.name, err)
	}
	if cfg := r.cfgs[[2]int{t.agent, t.source}]; cfg != nil {
		for _, p := range []string{recordfile.Record(cfg.RecordDir, t.name), recordfile.Export(cfg.RecordDir, t.name)} {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("trial %s: %w", t.name, err)
			}
		}
	}
	return nil
}

// keep writes the trial's files and result, then its results.jsonl line.
func (r *runner) keep(dir string, res *Result) error {
	var errs []error
	if res.Grade != nil {
		errs = append(errs, writeJSON(filepath.Join(dir, "grade.json"), res.Grade))
		res.Files = append(res.Files, "grade.json")
	}
	if res.Solve != nil {
		errs = append(errs, writeJSON(filepath.Join(dir, "solve.json"), res.Solve))
		res.Files = append(res.Files, "solve.json")
	}
	errs = append(errs, writeJSON(filepath.Join(dir, resultName), res), r.results.append(res))
	r.finished(res)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("trial %s: %w", res.Trial, err)
	}
	return nil
}

// started counts a trial starting (+1) or ending (-1).
func (r *runner) started(n int) {
	r.mu.Lock()
	r.progress.Running += n
	p := r.progress
	r.mu.Unlock()
	r.report(p)
}

// finished records a trial's result.
func (r *runner) finished(res *Result) {
	r.mu.Lock()
	r.done[res.Trial] = res
	r.progress.Done++
	r.count(res)
	p := r.progress
	r.mu.Unlock()
	p.Finished = res
	r.report(p)
}

// count adds res to the progress's reward figures (r.mu held).
func (r *runner) count(res *Result) {
	if res.Reward == nil {
		r.progress.Unrewarded++
	} else {
		r.progress.RewardSum += *res.Reward
	}
}

// report calls Options.Progress with p, a snapshot of where the job
// stood; calls are serialized.
func (r *runner) report(p Progress) {
	if r.o.Progress == nil {
		return
	}
	r.reportMu.Lock()
	defer r.reportMu.Unlock()
	r.o.Progress(p)
}
