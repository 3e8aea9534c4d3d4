package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/evaljob"
	"github.com/harnessd/harnessd/tasks"
)

func init() {
	register("eval", "run an evaluation job: tasks × agents × attempts, graded, with pass@k (docs/eval.md)", runEval)
}

// evalFlags are eval's command line: the shared setup flags (less
// --tasks and --agent, repeatable here) and the job's own.
type evalFlags struct {
	setupFlags
	tasks      listFlag
	agents     listFlag
	oracle     bool
	attempts   int
	concurrent int
	jobDir     string
	resume     string
	json       bool
	retryInc   listFlag
	retryExc   listFlag
	maxRetries int
}

func (f *evalFlags) register(fs *pflag.FlagSet) {
	fs.VarP(&f.tasks, "tasks", "t", "a taskset (repeatable): a Harbor task `path`, a directory of them, a .jsonl file or a .parquet dataset")
	fs.VarP(&f.agents, "agent", "a", "an agent (repeatable): a preset `name` (harnessd agents) or a harness command line (\"bin/testharness agent\")")
	fs.BoolVar(&f.oracle, "oracle", false, "evaluate the oracle too: each task's solution/solve.sh, as run --task --oracle runs it")
	fs.IntVarP(&f.attempts, "attempts", "k", 1, "trials per agent and task (pass@k for each k up to it)")
	fs.IntVarP(&f.concurrent, "n-concurrent", "n", 1, "trials run at once")
	fs.StringVar(&f.jobDir, "job-dir", "", "the job `directory` (default jobs/<timestamp>)")
	fs.StringVar(&f.resume, "resume", "", "resume the job in `DIR`: run only its trials without a result (the job's own flags are used when none are given)")
	fs.BoolVar(&f.json, "json", false, "print summary.json instead of the table")
	fs.Var(&f.retryInc, "retry-include", "retry trials failing with this error `type` (repeatable; default: "+strings.Join(evaljob.DefaultRetryTypes, ", ")+")")
	fs.Var(&f.retryExc, "retry-exclude", "never retry this error `type` (repeatable)")
	fs.IntVar(&f.maxRetries, "max-retries", evaljob.DefaultMaxRetries, "retries of one trial")
	f.env.omit = []string{"tasks", "agent"}
	f.setupFlags.register(fs)
	f.log.level = "warn"
}

// jobFlags are the flags that define a job (saved in job.json's settings
// and compared on --resume) rather than how it is run.
func (f *evalFlags) settings(fs *pflag.FlagSet) []string {
	var out []string
	for _, k := range f.env.knobs {
		for _, v := range k.raw {
			out = append(out, "--"+k.k.flag+"="+v)
		}
	}
	for _, name := range []string{"config", "agents-dir"} {
		if fl := fs.Lookup(name); fl.Changed {
			v := fl.Value.String()
			if abs, err := filepath.Abs(v); err == nil {
				v = abs
			}
			out = append(out, "--"+name+"="+v)
		}
	}
	return out
}

func newEvalCLI() (*cli, *evalFlags) {
	c := newCLI("eval", "harnessd eval --tasks PATH... (--agent AGENT... | --oracle) [-k ATTEMPTS] [-n N] [flags] [-- HARNESS COMMAND ARGS...]\n"+
		"harnessd eval --resume JOB_DIR [-n N]\n\n"+
		"Runs every task of the tasksets with every agent, ATTEMPTS times each, N trials at once, each in an episode\n"+
		"(and sandbox) of its own, graded by the task's tests. The job directory keeps job.json, a directory per trial\n"+
		"(record, training export, ATIF trajectory, grade, result.json), results.jsonl and summary.json. Prints a live\n"+
		"progress line on a terminal, then a table per agent and task: mean reward, pass@k, error types, durations,\n"+
		"tokens (--json: summary.json). Exit status 0 when every trial ran to a reward (whatever the rewards), 1 when\n"+
		"some could not (after retries) or the job was interrupted, 2 for a usage or configuration error. docs/eval.md.")
	c.fs.SetInterspersed(false)
	f := &evalFlags{}
	f.register(c.fs)
	return c, f
}

func runEval(args []string) int {
	c, f := newEvalCLI()
	if code, done := c.parse(args); done {
		return code
	}
	if f.resume != "" && len(f.tasks) == 0 && len(f.agents) == 0 && !f.oracle && c.fs.NArg() == 0 {
		// --resume DIR alone: the job's own flags, then this command's.
		saved, err := savedArgs(f.resume)
		if err != nil {
			return c.exit(withCode(exitUsage, err))
		}
		if c, f = newEvalCLI(); true {
			if code, done := c.parse(append(saved, args...)); done {
				return code
			}
		}
	}
	log, err := f.logger()
	if err != nil {
		return c.exit(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), drainSignals...)
	defer stop()
	defer dumpStacksOnQuit(log)()
	return f.run(ctx, c, log)
}

// run runs the job and returns the exit code.
func (f *evalFlags) run(ctx context.Context, c *cli, log *slog.Logger) int {
	o, err := f.options(c)
	if err != nil {
		return c.exit(withCode(exitUsage, err))
	}
	d, err := f.evalSetup(ctx, log, o.Spec.Agents)
	if err != nil {
		return c.exit(err)
	}
	defer d.sup.Close(context.Background(), 0)
	o.Supervisor, o.Adapters, o.Isolation, o.Logger = d.sup, d.x.adapters, d.isolation, log
	o.Hide, o.Version = daemonFiles(f.env.config), buildVersion()
	pr := newProgressPrinter(os.Stdout, os.Stderr)
	o.Progress = pr.update
	stopTicker := pr.tick()
	out, err := evaljob.Run(ctx, *o)
	stopTicker()
	pr.clear()
	if out == nil {
		return c.exit(withCode(exitUsage, err))
	}
	if f.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out.Summary)
	} else {
		evaljob.WriteTable(os.Stdout, out.Summary)
	}
	fmt.Fprintf(os.Stderr, "job %s: ran %d trials (%d finished before)\n", o.Dir, out.Ran, out.Skipped)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "harnessd eval: %v\n", err)
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "harnessd eval: resume with: harnessd eval --resume %s\n", o.Dir)
		}
		return exitFailure
	case !out.Complete:
		fmt.Fprintf(os.Stderr, "harnessd eval: %d trials could not run to a reward (results.jsonl says why); the others ran\n", out.Summary.Unrewarded)
		return exitFailure
	}
	return exitOK
}

// options are the job's options from the flags.
func (f *evalFlags) options(c *cli) (*evaljob.Options, error) {
	o := &evaljob.Options{Dir: f.jobDir, Concurrency: f.concurrent,
		Retry: evaljob.RetryPolicy{Include: splitList(f.retryInc), Exclude: splitList(f.retryExc), MaxRetries: f.maxRetries}}
	if f.resume != "" {
		if f.jobDir != "" && f.jobDir != f.resume {
			return nil, errors.New("--resume names the job directory: give it or --job-dir, not both")
		}
		o.Dir, o.Resume = f.resume, true
	}
	if o.Dir == "" {
		o.Dir = filepath.Join("jobs", time.Now().Format("2006-01-02__15-04-05"))
	}
	if f.concurrent < 1 || f.attempts < 1 || f.maxRetries < 0 {
		return nil, errors.New("-n and --attempts must be at least 1, --max-retries not negative")
	}
	o.Spec = evaljob.Spec{Attempts: f.attempts, Settings: f.settings(c.fs)}
	for _, p := range f.tasks {
		o.Spec.Tasks = append(o.Spec.Tasks, evalTaskSource(p))
	}
	agents, err := f.agentList(c.fs.Args())
	if err != nil {
		return nil, err
	}
	o.Spec.Agents = agents
	return o, nil
}

// agentList is the job's agents: --oracle, each --agent (a preset's name,
// else a harness command line), then the command after "--".
func (f *evalFlags) agentList(command []string) ([]evaljob.Agent, error) {
	x, err := linked()
	if err != nil {
		return nil, err
	}
	var out []evaljob.Agent
	names := map[string]int{}
	add := func(a evaljob.Agent) {
		if n := names[a.Name]; n > 0 {
			a.Name = fmt.Sprintf("%s-%d", a.Name, n+1)
		}
		names[a.Name]++
		out = append(out, a)
	}
	if f.oracle {
		add(evaljob.Agent{Name: "oracle", Oracle: true})
	}
	for _, a := range f.agents {
		if _, ok := x.presets.Lookup(a); ok {
			preset := a
			add(evaljob.Agent{Name: preset, Preset: preset, Config: func() (*config.Config, error) { return f.env.buildAgent(nil, preset) }})
			continue
		}
		args, err := splitArgs(a)
		if err != nil || len(args) == 0 {
			return nil, fmt.Errorf("--agent %q: not a preset (%s) nor a command line", a, strings.Join(x.presets.Names(), ", "))
		}
		add(commandAgent(f, args))
	}
	if len(command) > 0 {
		add(commandAgent(f, command))
	}
	return out, nil
}

// commandAgent is the agent whose harness is the command args.
func commandAgent(f *evalFlags, args []string) evaljob.Agent {
	args = absProgram(args)
	return evaljob.Agent{Name: filepath.Base(args[0]), Command: args, Config: func() (*config.Config, error) { return f.env.build(args) }}
}

// evalSetup starts what every trial shares: the linked adapters, the
// process supervisor and the isolation level; every agent's configuration
// is built once to refuse a harness that cannot run before any trial.
func (f *evalFlags) evalSetup(ctx context.Context, log *slog.Logger, agents []evaljob.Agent) (*daemon, error) {
	x, err := linked()
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	cfg := &config.Config{} // the oracle's: the defaults
	for i, a := range agents {
		if a.Oracle {
			continue
		}
		c, err := a.Config()
		if err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("agent %s: %w", a.Name, err))
		}
		if err := refuseUnrunnable(c, false); err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("agent %s: %w", a.Name, err))
		}
		if i == 0 || cfg.Harness.Agent == "" && len(cfg.Harness.Command) == 0 {
			cfg = c
		}
	}
	sup, err := f.iso.supervisor(log)
	if err != nil {
		return nil, withCode(exitMissing, err)
	}
	level, err := resolveIsolation(ctx, f.iso.level, cfg, log)
	if err != nil {
		sup.Close(context.Background(), 0)
		return nil, withCode(exitMissing, err)
	}
	return &daemon{cfg: cfg, x: x, sup: sup, isolation: level}, nil
}

// evalTaskSource is taskSource, and a directory holding task.toml is one
// task (run --task's).
func evalTaskSource(p string) tasks.Source {
	src := taskSource(p)
	if _, err := os.Stat(filepath.Join(src.Dir, "task.toml")); src.Dir != "" && err == nil {
		return tasks.Source{Task: src.Dir}
	}
	return src
}

// splitList splits comma-separated values of a repeatable flag.
func splitList(vs []string) []string {
	var out []string
	for _, v := range vs {
		for s := range strings.SplitSeq(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// savedArgs are the flags that define the job in dir, from its job.json.
func savedArgs(dir string) ([]string, error) {
	jf, err := evaljob.ReadJob(dir)
	if err != nil {
		return nil, err
	}
	args := append([]string(nil), jf.Settings...)
	args = append(args, fmt.Sprintf("--attempts=%d", jf.Attempts))
	for _, s := range jf.Tasks {
		p := s.Dir + s.JSONL + s.Task + s.Parquet // one of them
		args = append(args, "--tasks="+p)
	}
	for _, a := range jf.Agents {
		switch {
		case a.Oracle:
			args = append(args, "--oracle")
		case a.Preset != "":
			args = append(args, "--agent="+a.Preset)
		default:
			args = append(args, "--agent="+quoteArgs(a.Command))
		}
	}
	return args, nil
}

// quoteArgs joins args into a line splitArgs splits back.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'"
	}
	return strings.Join(q, " ")
}
