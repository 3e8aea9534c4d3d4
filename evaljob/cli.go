package evaljob

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/tasks"
)

// Flags are `harnessd eval`'s own flags: the job's. cmd/harnessd
// registers them beside the environment's (the configuration, model,
// limits and isolation flags serve and run have) and hands the parsed
// values to Options with the Env it builds agents from.
type Flags struct {
	// Tasks are the --tasks paths; Agents the --agent values (presets or
	// command lines); Oracle is --oracle.
	Tasks  []string
	Agents []string
	Oracle bool
	// Attempts is --attempts (k), Concurrency -n.
	Attempts    int
	Concurrency int
	// JobDir is --job-dir, Resume --resume's directory.
	JobDir string
	Resume string
	// JSON is --json: summary.json instead of the table.
	JSON bool
	// RetryInclude, RetryExclude and MaxRetries make the RetryPolicy.
	RetryInclude []string
	RetryExclude []string
	MaxRetries   int
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&f.Tasks, "tasks", "t", nil, "a taskset (repeatable): a Harbor task `path`, a directory of them, a .jsonl file or a .parquet dataset")
	fs.StringArrayVarP(&f.Agents, "agent", "a", nil, "an agent (repeatable): a preset `name` (harnessd agents) or a harness command line (\"bin/testharness agent\")")
	fs.BoolVar(&f.Oracle, "oracle", false, "evaluate the oracle: each task's solution/solve.sh, as run --task --oracle runs it")
	fs.IntVarP(&f.Attempts, "attempts", "k", 1, "trials per agent and task (pass@k for each k up to it)")
	fs.IntVarP(&f.Concurrency, "n-concurrent", "n", 1, "trials run at once")
	fs.StringVar(&f.JobDir, "job-dir", "", "the job `directory` (default jobs/<timestamp>)")
	fs.StringVar(&f.Resume, "resume", "", "resume the job in `DIR`: run only its trials without a result (with no --tasks, --agent or --oracle, the job's own flags)")
	fs.BoolVar(&f.JSON, "json", false, "print summary.json instead of the table")
	fs.StringArrayVar(&f.RetryInclude, "retry-include", nil, "retry trials failing with these error `types` (repeatable, or comma-separated; default "+strings.Join(DefaultRetryTypes, ", ")+")")
	fs.StringArrayVar(&f.RetryExclude, "retry-exclude", nil, "never retry these error `types` (repeatable, or comma-separated)")
	fs.IntVar(&f.MaxRetries, "max-retries", DefaultMaxRetries, "retries of one trial")
}

// ResumeAlone reports a bare --resume DIR (no tasks, agents or harness
// command): the command line is then the job's own (SavedArgs) followed
// by this one.
func (f *Flags) ResumeAlone(command []string) bool {
	return f.Resume != "" && len(f.Tasks) == 0 && len(f.Agents) == 0 && !f.Oracle && len(command) == 0
}

// Env is what the command line builds agents with.
type Env struct {
	// Settings are the environment flags given, as job.json keeps them.
	Settings []string
	// TaskSource reads a --tasks path.
	TaskSource func(path string) tasks.Source
	// IsPreset reports whether name is an agent preset.
	IsPreset func(name string) bool
	// Build builds an agent's configuration: the preset's (preset not
	// ""), else the harness command's.
	Build func(preset string, command []string) (*config.Config, error)
	// AbsProgram makes a command's relative program absolute.
	AbsProgram func(command []string) []string
	// SplitArgs splits an --agent command line.
	SplitArgs func(line string) ([]string, error)
	// FromConfig says a configuration file was given: without --agent,
	// --oracle or a command, its harness is the job's one agent.
	FromConfig bool
}

// Options are the job's options from the flags; command is the harness
// command after "--" (one more agent). The caller fills in what the
// daemon supplies (Supervisor, Adapters, Isolation, Logger...).
func (f *Flags) Options(command []string, env Env) (*Options, error) {
	o := &Options{Dir: f.JobDir, Concurrency: f.Concurrency,
		Retry: RetryPolicy{Include: splitList(f.RetryInclude), Exclude: splitList(f.RetryExclude), MaxRetries: f.MaxRetries}}
	if f.Resume != "" {
		if f.JobDir != "" && f.JobDir != f.Resume {
			return nil, errors.New("--resume names the job directory: give it or --job-dir, not both")
		}
		o.Dir, o.Resume = f.Resume, true
	}
	if f.Concurrency < 1 || f.Attempts < 1 || f.MaxRetries < 0 {
		return nil, errors.New("-n and --attempts must be at least 1, --max-retries not negative")
	}
	if o.Dir == "" {
		d, err := claimJobDir(filepath.Join("jobs", time.Now().Format("2006-01-02__15-04-05")))
		if err != nil {
			return nil, err
		}
		o.Dir = d
	}
	o.Spec = Spec{Attempts: f.Attempts, Settings: env.Settings}
	for _, p := range f.Tasks {
		o.Spec.Tasks = append(o.Spec.Tasks, env.TaskSource(p))
	}
	names := map[string]int{}
	add := func(a Agent) {
		if n := names[a.Name]; n > 0 {
			a.Name = fmt.Sprintf("%s-%d", a.Name, n+1)
		}
		names[a.Name]++
		o.Spec.Agents = append(o.Spec.Agents, a)
	}
	if f.Oracle {
		add(Agent{Name: "oracle", Oracle: true})
	}
	cmds := [][]string{}
	for _, a := range f.Agents {
		if env.IsPreset(a) {
			preset := a
			add(Agent{Name: preset, Preset: preset, Config: func() (*config.Config, error) { return env.Build(preset, nil) }})
			continue
		}
		args, err := env.SplitArgs(a)
		if err != nil || len(args) == 0 {
			return nil, fmt.Errorf("--agent %q: neither a preset (harnessd agents lists them) nor a command line", a)
		}
		cmds = append(cmds, args)
	}
	if len(command) > 0 {
		cmds = append(cmds, command)
	}
	for _, args := range cmds {
		args = env.AbsProgram(args)
		add(Agent{Name: filepath.Base(args[0]), Command: args, Config: func() (*config.Config, error) { return env.Build("", args) }})
	}
	if len(o.Spec.Agents) == 0 && env.FromConfig {
		build := func() (*config.Config, error) { return env.Build("", nil) }
		cfg, err := build()
		if err != nil {
			return nil, err
		}
		add(Agent{Name: cfg.Name, Config: build}) // named as the environment is (name:, else its harness)
	}
	return o, nil
}

// SavedArgs are the flags that define the job in dir, from its job.json:
// what a bare --resume DIR runs with.
func SavedArgs(dir string) ([]string, error) {
	jf, err := ReadJob(dir)
	if err != nil {
		return nil, err
	}
	args := append([]string(nil), jf.Settings...)
	args = append(args, fmt.Sprintf("--attempts=%d", jf.Attempts))
	for _, s := range jf.Tasks {
		if !reflect.ValueOf(s.Columns).IsZero() {
			return nil, fmt.Errorf("%s: a Parquet taskset with columns cannot be given on the command line: resume with the job's flags", dir)
		}
		args = append(args, "--tasks="+s.Dir+s.JSONL+s.Task+s.Parquet) // one of them is set
	}
	for _, a := range jf.Agents {
		switch {
		case a.Oracle:
			args = append(args, "--oracle")
		case a.Preset != "":
			args = append(args, "--agent="+a.Preset)
		case len(a.Command) > 0:
			args = append(args, "--agent="+quoteArgs(a.Command))
		} // else the configuration file's harness: its --config is in Settings
	}
	return args, nil
}

// quoteArgs joins args into one line of single-quoted words.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'"
	}
	return strings.Join(q, " ")
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

// Exit statuses of `harnessd eval` beyond usage errors.
const (
	// ExitComplete: every trial ran to a reward, whatever the rewards.
	ExitComplete = 0
	// ExitIncomplete: some trial could not run (no reward after its
	// retries), or the job was interrupted.
	ExitIncomplete = 1
)

// Report prints a finished Run: the table (or summary.json, asJSON) on
// stdout, what ran and why it is incomplete on stderr. It returns the exit
// status: ExitComplete or ExitIncomplete.
func Report(stdout, stderr io.Writer, o *Options, out *Outcome, runErr error, asJSON bool) int {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out.Summary)
	} else {
		WriteTable(stdout, out.Summary)
	}
	fmt.Fprintf(stderr, "job %s: ran %d trials (%d finished before)\n", o.Dir, out.Ran, out.Skipped)
	switch {
	case runErr != nil:
		fmt.Fprintf(stderr, "harnessd eval: %v\n", runErr)
		fmt.Fprintf(stderr, "harnessd eval: resume with: harnessd eval --resume %s\n", o.Dir)
		return ExitIncomplete
	case !out.Complete:
		fmt.Fprintf(stderr, "harnessd eval: %d trials could not run to a reward (results.jsonl says why); the others ran\n", out.Summary.Unrewarded)
		return ExitIncomplete
	}
	return ExitComplete
}

// claimJobDir makes the default job directory base, or base-2, base-3...
// when another job has it (two jobs started in the same second), with
// mkdir, so that two jobs never take the same one: the second was refused
// with advice to resume the first.
func claimJobDir(base string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", fmt.Errorf("job directory: %w", err)
	}
	for i := 1; i <= 1000; i++ {
		d := base
		if i > 1 {
			d = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(d, 0o755)
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("job directory: %w", err)
		}
	}
	return "", fmt.Errorf("job directory: %s and 999 more like it exist (give --job-dir)", base)
}
