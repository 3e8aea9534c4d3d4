package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/evaljob"
	"github.com/harnessd/harnessd/tasks"
)

func init() {
	register("eval", "run an evaluation job: tasks × agents × attempts, graded, with pass@k (docs/eval.md)", runEval)
}

// newEvalCLI is eval's command line: the job's flags (package evaljob)
// and the shared setup flags less --tasks and --agent (the job's).
func newEvalCLI() (*cli, *evaljob.Flags, *setupFlags) {
	c := newCLI("eval", "harnessd eval --tasks PATH... (--agent AGENT... | --oracle) [-k ATTEMPTS] [-n N] [flags] [-- HARNESS COMMAND ARGS...]\n"+
		"  harnessd eval --resume JOB_DIR [-n N]\n\n"+
		"Runs every task of the tasksets with every agent, ATTEMPTS times each, N trials at once, each in an episode (and\n"+
		"sandbox) of its own, graded by the task's tests; the job directory keeps every trial's record, trajectory and\n"+
		"grade. Prints progress, then a table per agent and task (mean reward, pass@k, error types, durations, tokens;\n"+
		"--json: summary.json). Exit status 0 when every trial ran to a reward (whatever the rewards), 1 when some could\n"+
		"not (after retries) or the job was interrupted, 2 for a usage or configuration error, 3 when a required\n"+
		"isolation mechanism is missing (--isolation sandbox where there is none). docs/eval.md.")
	c.fs.SetInterspersed(false)
	jf, sf := &evaljob.Flags{}, &setupFlags{}
	jf.Register(c.fs)
	sf.env.omit = []string{"tasks", "agent"}
	sf.register(c.fs)
	sf.log.level = "warn"
	return c, jf, sf
}

func runEval(args []string) int {
	c, jf, sf := newEvalCLI()
	if code, done := c.parse(args); done {
		return code
	}
	if jf.ResumeAlone(c.fs.Args()) {
		saved, err := evaljob.SavedArgs(jf.Resume)
		if err != nil {
			return c.exit(withCode(exitUsage, err))
		}
		if c, jf, sf = newEvalCLI(); true {
			if code, done := c.parse(append(saved, args...)); done {
				return code
			}
		}
	}
	log, err := sf.logger()
	if err != nil {
		return c.exit(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), drainSignals...)
	defer stop()
	defer dumpStacksOnQuit(log)()
	o, err := jf.Options(c.fs.Args(), evaljob.Env{Settings: evalSettings(c, sf), TaskSource: evalTaskSource, SplitArgs: splitArgs,
		AbsProgram: absProgram, Build: sf.env.buildAgent, FromConfig: sf.env.config != "", IsPreset: func(n string) bool { x, _ := linked(); _, ok := x.presets.Lookup(n); return ok }})
	if err != nil {
		return c.exit(withCode(exitUsage, err))
	}
	if err := sf.evalSetup(ctx, log, o); err != nil {
		return c.exit(err)
	}
	defer o.Supervisor.Close(context.Background(), 0)
	term := evaljob.NewTerminal(os.Stdout, os.Stderr)
	o.Progress = term.Update
	stopTicker := term.Tick()
	out, err := evaljob.Run(ctx, *o)
	stopTicker()
	term.Done()
	if out == nil {
		return c.exit(withCode(exitUsage, err))
	}
	return evaljob.Report(os.Stdout, os.Stderr, o, out, err, jf.JSON)
}

// evalSetup starts what every trial shares into o — the process
// supervisor, the isolation level — after building every agent's
// configuration once, to refuse a harness that cannot run.
func (f *setupFlags) evalSetup(ctx context.Context, log *slog.Logger, o *evaljob.Options) error {
	cfg := &config.Config{} // the oracle's: the defaults
	for _, a := range o.Spec.Agents {
		if a.Oracle {
			continue
		}
		c, err := a.Config()
		if err == nil {
			err = refuseUnrunnable(c, false)
		}
		if err != nil && !strings.Contains(err.Error(), "agent "+a.Name) {
			err = fmt.Errorf("agent %s: %w", a.Name, err)
		}
		if err != nil {
			return withCode(exitUsage, err)
		}
		cfg = c
	}
	d, err := f.setup(ctx, log, setupOptions{cfg: cfg})
	if err != nil {
		return err
	}
	sweepLeftovers(log, cfg) // what killed daemons (a killed job) left
	o.Supervisor, o.Adapters, o.Isolation, o.Logger = d.sup, d.x.adapters, d.isolation, log
	o.Hide, o.Version = daemonFiles(f.env.config), buildVersion()
	return nil
}

// evalSettings are the environment flags given, which define the job
// (job.json keeps them; a resume must give the same).
func evalSettings(c *cli, sf *setupFlags) []string {
	var out []string
	for _, k := range sf.env.knobs {
		for _, v := range k.raw {
			out = append(out, "--"+k.k.flag+"="+v)
		}
	}
	for _, name := range []string{"config", "agents-dir"} {
		if fl := c.fs.Lookup(name); fl.Changed {
			v, _ := filepath.Abs(fl.Value.String())
			out = append(out, "--"+name+"="+v)
		}
	}
	return out
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
