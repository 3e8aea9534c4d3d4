package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/termtext"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

func init() {
	register("run", "run one episode locally: messages from -m or stdin, events printed live", runRun)
}

// runFlags are run's command line: the shared setup flags and the
// episode's turns.
type runFlags struct {
	setupFlags
	msgs      listFlag
	episodeID string
	taskDir   string
	oracle    bool
	// taskID is --task when it names no directory: the id of a task of
	// the configuration's taskset, and taskTurns its turns.
	taskID    string
	taskTurns int
}

func (f *runFlags) register(fs *pflag.FlagSet) {
	f.setupFlags.register(fs)
	f.log.level = "warn"
	fs.VarP(&f.msgs, "message", "m", "a turn's `message` (repeatable); without -m, stdin lines are turns")
	fs.StringVar(&f.episodeID, "episode-id", "", "episode `id`")
	fs.StringVar(&f.taskDir, "task", "", "run the Harbor task in `DIR` (or the task of that id of the configuration's taskset): its instruction is the first turn (unless -m), its tests grade the end; prints the reward")
	fs.BoolVar(&f.oracle, "oracle", false, "with --task: run the task's solution/solve.sh instead of an agent, then its tests (of the configuration only its taskset and network apply: the tests reach the network only through its egress proxy)")
}

func runRun(args []string) int {
	c := newCLI("run", "harnessd run [flags] [-m MESSAGE]... [-- HARNESS COMMAND ARGS...]\n\n"+
		"Runs one episode without a server: each -m (or each stdin line) is one turn. With a simulated user\n"+
		"(user: in the configuration) the user writes every turn after the -m messages (all of them without\n"+
		"-m; stdin is not read) until the episode is done: the user says done, the harness does, max_turns,\n"+
		"a failure or the episode's budget. Events are printed\n"+
		"to stderr as they happen; the final observation is printed to stdout as one line of JSON,\n"+
		"{\"reward\", \"done\", \"metadata\"} (OpenEnv's wire form without its second copy of the metadata).")
	c.fs.SetInterspersed(false) // "run ./harness -x": -x is the harness's
	var f runFlags
	f.register(c.fs)
	if code, done := c.parse(args); done {
		return code
	}
	log, err := f.logger()
	if err != nil {
		return c.exit(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), drainSignals...)
	defer stop()
	defer dumpStacksOnQuit(log)()
	if f.oracle {
		if f.taskDir == "" {
			return c.exit(withCode(exitUsage, errors.New("--oracle needs --task DIR (or the ID of a task of --tasks or the configuration's taskset)")))
		}
		cfg, err := f.oracleConfig()
		if err != nil {
			return c.exit(err)
		}
		t, err := f.oracleTask(cfg)
		if err != nil {
			return c.exit(err)
		}
		return runOracle(ctx, t, cfg.Network.EgressOptions())
	}
	return f.run(ctx, c, log)
}

// oracleConfig is what --oracle takes of --config (an empty configuration
// without one), the knobs applied: its taskset, to find --task ID in, and
// its network, which the task's tests reach through its egress proxy as a
// session's grader does.
func (f *runFlags) oracleConfig() (*config.Config, error) {
	cfg := &config.Config{}
	if f.env.config != "" {
		c, err := config.LoadConfig(f.env.config)
		if err != nil {
			return nil, withCode(exitUsage, err)
		}
		cfg = c
	}
	f.env.knobs.apply(cfg)
	return cfg, nil
}

// oracleTask is the task --oracle runs: --task's directory, or, where no
// such directory is, the task of that id in cfg's taskset (--config's and
// --tasks), as an agent's run --task ID finds it.
func (f *runFlags) oracleTask(cfg *config.Config) (*tasks.Task, error) {
	if _, err := os.Stat(f.taskDir); err == nil || strings.ContainsRune(f.taskDir, '/') {
		set, err := tasks.Load(tasks.Source{Task: f.taskDir})
		if err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("--task: %w", err))
		}
		return set.Tasks()[0], nil
	}
	if cfg.Tasks.Empty() {
		return nil, withCode(exitUsage, fmt.Errorf("--task %s: no such directory, and no taskset (--tasks, or tasks: in --config) to find a task of that id in", f.taskDir))
	}
	set, err := tasks.Load(cfg.Tasks)
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("tasks: %w", err))
	}
	t, err := set.Pick(tasks.Choice{ID: f.taskDir})
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("--task %s: no such directory, nor a task of the taskset: %w", f.taskDir, err))
	}
	return t, nil
}

// run runs the episode and returns the exit code.
func (f *runFlags) run(ctx context.Context, c *cli, log *slog.Logger) int {
	args, err := c.harnessArgs()
	if err != nil {
		return c.exit(withCode(exitUsage, err))
	}
	o := setupOptions{args: args}
	if f.taskDir != "" {
		o.adjust = func(cfg *config.Config) error { return taskConfig(cfg, f.taskDir) }
		if _, err := os.Stat(f.taskDir); err != nil && !strings.ContainsRune(f.taskDir, '/') {
			o.adjust = f.configuredTask
		}
	}
	d, err := f.setup(ctx, log, o)
	if err != nil {
		return c.exit(err)
	}
	defer d.sup.Close(context.Background(), 0)
	sess, err := session.NewSession(session.Options{Config: d.cfg, Adapters: d.x.adapters, Supervisor: d.sup, Logger: log,
		Isolation: d.isolation, Hide: daemonFiles(f.env.config)})
	if err != nil {
		return c.exit(withCode(exitUsage, err))
	}
	defer sess.Close(context.Background())
	last, err := f.episode(ctx, sess)
	if err != nil {
		return c.exit(err)
	}
	if f.taskDir != "" {
		return taskResult(last)
	}
	printFinal(last)
	if last.Metadata.ErrorType != "" {
		return exitFailure
	}
	return exitOK
}

// episode resets sess and steps it with each message until the episode
// ends or the messages run out, printing as it goes; it returns the last
// observation.
func (f *runFlags) episode(ctx context.Context, sess *session.Session) (*wire.Observation, error) {
	pr := newPrinter(os.Stderr)
	last, err := sess.Reset(ctx, session.ResetOptions{EpisodeID: f.episodeID, TaskID: f.taskID})
	if err != nil {
		return nil, fmt.Errorf("reset: %w", err)
	}
	pr.observation("reset", last)
	next := messageSource(f.msgs)
	switch {
	case sess.Config().User != nil: // after the -m messages, the simulated user's turns until done
		next = userTurns(f.msgs)
	case f.taskID != "" && len(f.msgs) == 0:
		next = messageSource(make([]string, f.taskTurns))
	case f.taskDir != "" && len(f.msgs) == 0:
		// The task's instruction; a multi-step task's, one per step.
		next = messageSource(make([]string, taskTurns(f.taskDir)))
	}
	for !last.Done {
		msg, ok := next()
		if !ok {
			break
		}
		obs, err := sess.Step(ctx, wire.Action{Message: msg}, pr.event)
		if err != nil {
			return nil, fmt.Errorf("step: %w", err)
		}
		pr.observation(fmt.Sprintf("turn %d", obs.Metadata.TurnNumber), obs)
		if obs.Metadata.UserDone {
			fmt.Fprintf(os.Stderr, "the simulated user ended the episode: %s\n", termtext.Escape(obs.Metadata.UserReason))
		}
		last = obs
	}
	return last, nil
}

// userTurns yields msgs, then empty messages (the simulated user's).
func userTurns(msgs []string) func() (string, bool) {
	return func() (string, bool) {
		if len(msgs) == 0 {
			return "", true
		}
		m := msgs[0]
		msgs = msgs[1:]
		return m, true
	}
}

// finalObservation is what run prints on stdout: the observation with its
// metadata once (OpenEnv's wire form repeats it inside "observation";
// wire.Observation decodes either).
type finalObservation struct {
	Reward   *float64       `json:"reward"`
	Done     bool           `json:"done"`
	Metadata *wire.Metadata `json:"metadata"`
}

// printFinal prints the final observation on stdout, one JSON line.
func printFinal(o *wire.Observation) {
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	out.Encode(finalObservation{Reward: o.Reward, Done: o.Done, Metadata: &o.Metadata})
}

// messageSource yields the -m messages, or stdin lines (with a prompt on a
// terminal).
func messageSource(msgs []string) func() (string, bool) {
	if len(msgs) > 0 {
		i := 0
		return func() (string, bool) {
			if i >= len(msgs) {
				return "", false
			}
			i++
			return msgs[i-1], true
		}
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	tty := term.IsTerminal(int(os.Stdin.Fd()))
	return func() (string, bool) {
		for {
			if tty {
				fmt.Fprint(os.Stderr, "> ")
			}
			if !sc.Scan() {
				if tty {
					fmt.Fprintln(os.Stderr) // end the prompt's line (^D)
				}
				return "", false
			}
			if line := sc.Text(); line != "" {
				return line, true
			}
		}
	}
}

// configuredTask is the setup's adjustment for --task ID: the task of
// that id of the configuration's taskset (a JSONL row, a directory of its
// tasks: dir), run as --task DIR runs one.
func (f *runFlags) configuredTask(cfg *config.Config) error {
	if err := cfg.Normalize(); err != nil {
		return err
	}
	set := cfg.Taskset()
	if set == nil {
		return withCode(exitUsage, fmt.Errorf("--task %s: no such directory, and the configuration has no taskset (tasks:) to find a task of that id in", f.taskDir))
	}
	t, err := set.Pick(tasks.Choice{ID: f.taskDir})
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--task %s: no such directory, nor a task of the configuration's taskset: %w", f.taskDir, err))
	}
	f.taskID, f.taskTurns = t.ID, max(1, len(t.Steps))
	if cfg.Episode.MaxTurns == 0 {
		cfg.Episode.MaxTurns = f.taskTurns
	}
	return nil
}
