package evaljob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/recordfile"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/tasks"
)

// Options configure Run.
type Options struct {
	// Dir is the job directory: created (it must not exist or be empty),
	// or, with Resume, an existing job's.
	Dir string
	// Resume continues the job in Dir: only its trials without a result
	// run, and Spec must equal its job.json's.
	Resume bool
	// Spec defines the job.
	Spec Spec
	// Concurrency is how many trials run at once (at least 1).
	Concurrency int
	// Retry says which failed trials run again.
	Retry RetryPolicy
	// Supervisor starts every process of every trial's episode.
	Supervisor *process.Supervisor
	// Adapters makes the agents' harness adapters.
	Adapters *harness.Registry
	// Isolation is the daemon's resolved isolation level.
	Isolation string
	// Hide are further host paths covered inside every sandbox (the
	// daemon's files); the job directory is always hidden.
	Hide []string
	// Logger receives the job's log; nil means slog.Default().
	Logger *slog.Logger
	// Version is harnessd's version, written into job.json and the
	// trajectories.
	Version string
	// Progress, when set, is called whenever a trial starts or finishes;
	// calls do not overlap.
	Progress func(Progress)
}

// Progress is where a job stands.
type Progress struct {
	// Total counts the job's trials, Done the finished ones (Resumed of
	// them finished before this run), Running those under way.
	Total, Done, Resumed, Running int
	// Unrewarded counts the finished trials without a reward.
	Unrewarded int
	// RewardSum sums the finished trials' rewards.
	RewardSum float64
	// Started is when this run began.
	Started time.Time
	// Finished is the result of the trial whose end this report is for
	// (nil when a trial started).
	Finished *Result
}

// Outcome is what Run did.
type Outcome struct {
	// Summary summarizes every finished trial of the job (summary.json).
	Summary *Summary
	// Ran counts the trials run by this call; Skipped those a resumed job
	// had finished already.
	Ran, Skipped int
	// Complete says every trial of the job ran to a reward.
	Complete bool
}

// runner is one Run.
type runner struct {
	o       *Options
	plan    []trial
	cfgs    map[[2]int]*config.Config // (agent, source) → configuration
	results *resultLog
	scratch string // the oracle's scratch directories

	mu       sync.Mutex
	progress Progress
	done     map[string]*Result
	reportMu sync.Mutex // serializes Options.Progress
	lock     *os.File   // the job directory's lock, held until Run returns
}

// Run runs the job: it plans every trial (tasks × agents × attempts),
// writes job.json (or checks it, with Resume), runs the trials without a
// result Concurrency at once — retrying those whose failure the policy
// retries — appending each result to results.jsonl as it finishes, and
// writes summary.json. A cancelled ctx stops it: running trials are ended
// without a result (a resume runs them) and Run returns ctx's error beside
// the summary so far.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Concurrency < 1 {
		o.Concurrency = 1
	}
	if err := o.Spec.validate(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("job directory: %w", err)
	}
	o.Dir = abs
	r := &runner{o: &o, cfgs: map[[2]int]*config.Config{}, done: map[string]*Result{}}
	if err := r.planTrials(); err != nil {
		return nil, err
	}
	if err := r.configure(); err != nil {
		return nil, err
	}
	err = r.openDir()
	if r.lock != nil {
		defer r.lock.Close()
	}
	if err != nil {
		return nil, err
	}
	defer r.results.close()
	for _, cfg := range r.cfgs {
		if err := os.MkdirAll(cfg.RecordDir, 0o755); err != nil {
			return nil, fmt.Errorf("record directory: %w", err)
		}
	}
	if r.scratch, err = os.MkdirTemp("", "harnessd-eval-"); err != nil {
		return nil, fmt.Errorf("scratch directory: %w", err)
	}
	defer os.RemoveAll(r.scratch)
	out := &Outcome{Skipped: len(r.done)}
	out.Ran, err = r.runAll(ctx)
	sum := Summarize(&r.o.Spec, r.finishedInOrder())
	out.Summary, out.Complete = sum, sum.Unrewarded == 0 && sum.Finished == sum.Trials
	if werr := writeJSON(filepath.Join(o.Dir, summaryFile), sum); werr != nil {
		err = errors.Join(err, werr)
	}
	return out, err
}

// planTrials loads the tasksets and lists every trial, attempt by
// attempt (so an interrupted job has tried every task), task by task,
// agent by agent.
func (r *runner) planTrials() error {
	spec := &r.o.Spec
	var all []*tasks.Task
	var from []int
	seen := map[string]string{}
	for i, src := range spec.Tasks {
		set, err := tasks.Load(src)
		if err != nil {
			return fmt.Errorf("tasks: %w", err)
		}
		for _, t := range set.Tasks() {
			if prev, dup := seen[t.ID]; dup {
				return fmt.Errorf("tasks: task id %s is in two tasksets (%s and %s)", t.ID, prev, t.Source)
			}
			seen[t.ID] = t.Source
			all, from = append(all, t), append(from, i)
		}
	}
	if len(all) == 0 {
		return errors.New("tasks: the tasksets hold no task")
	}
	var missing []string
	for _, t := range all {
		if !t.HasSolution() && !t.IsMultiStep() { // the steps' own are checked when it runs
			missing = append(missing, t.ID)
		}
	}
	spec.TaskIDs = nil
	for _, t := range all {
		spec.TaskIDs = append(spec.TaskIDs, t.ID)
	}
	for _, a := range spec.Agents {
		if a.Oracle && len(missing) > 0 {
			return fmt.Errorf("agent %s: tasks without solution/solve.sh cannot be run by the oracle: %v", a.Name, missing)
		}
	}
	for k := 1; k <= spec.Attempts; k++ {
		for ti, t := range all {
			for ai, a := range spec.Agents {
				r.plan = append(r.plan, trial{name: trialName(a.Name, t.ID, k), agent: ai, source: from[ti], task: t, attempt: k})
			}
		}
	}
	return nil
}

// openDir creates the job directory, or opens a resumed one: its job.json
// must define the same job, and its finished trials are read. Either way
// the directory's lock is taken first.
func (r *runner) openDir() error {
	o := r.o
	jf := &JobFile{Spec: o.Spec, Concurrency: o.Concurrency, Retry: o.Retry, Harnessd: o.Version, Created: time.Now().UTC()}
	var old *JobFile
	var err error
	if o.Resume {
		old, err = openJob(o.Dir)
	} else {
		err = makeJobDir(o.Dir)
	}
	if err != nil {
		return err
	}
	if r.lock, err = lockJob(o.Dir); err != nil {
		return err
	}
	if old != nil {
		if d := o.Spec.Diff(&old.Spec); d != "" {
			return fmt.Errorf("--resume %s: the job's configuration differs from this command's, %s (resume with the job's own flags, or start a new job)", o.Dir, d)
		}
		jf.Created = old.Created
		if r.done, err = finishedResults(o.Dir, r.plan); err != nil {
			return err
		}
	} else if _, err := os.Stat(filepath.Join(o.Dir, jobFile)); err == nil {
		return fmt.Errorf("job directory %s was taken by another harnessd eval", o.Dir)
	}
	if err := writeJSON(filepath.Join(o.Dir, jobFile), jf); err != nil {
		return err
	}
	r.results, err = openResultLog(o.Dir, r.done, r.plan)
	return err
}

// configure builds each agent's configuration for each taskset: the
// agent's own, with the taskset, the agent's record directory in the job
// directory (made once the job directory is) and one turn per episode
// unless it says otherwise.
func (r *runner) configure() error {
	for ai, a := range r.o.Spec.Agents {
		if a.Oracle {
			continue
		}
		for si, src := range r.o.Spec.Tasks {
			cfg, err := a.Config()
			if err != nil {
				return fmt.Errorf("agent %s: %w", a.Name, err)
			}
			cfg.Tasks = src.Clone()
			cfg.RecordDir = filepath.Join(r.o.Dir, recordsDir, recordfile.FileName(a.Name))
			if cfg.Episode.MaxTurns == 0 {
				cfg.Episode.MaxTurns = 1
			}
			if err := cfg.Normalize(); err != nil {
				return fmt.Errorf("agent %s: %w", a.Name, err)
			}
			r.cfgs[[2]int{ai, si}] = cfg
		}
	}
	return nil
}

// hide are the host paths covered inside every trial's sandboxes.
func (r *runner) hide() []string { return append([]string{r.o.Dir}, r.o.Hide...) }

// finishedInOrder are the job's finished trials' results, in plan order.
func (r *runner) finishedInOrder() []*Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Result
	for _, t := range r.plan {
		if res := r.done[t.name]; res != nil {
			out = append(out, res)
		}
	}
	return out
}
