package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/term"

	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

func init() {
	register("run", "run one episode locally: messages from -m or stdin, events printed live", runRun)
}

func runRun(args []string) int {
	c := newCLI("run", "harnessd run [flags] [-m MESSAGE]... [-- HARNESS COMMAND ARGS...]\n\n"+
		"Runs one episode without a server: each -m (or each stdin line) is one turn. Events are printed\n"+
		"to stderr as they happen; the final observation is printed to stdout as JSON.")
	fs := c.fs
	fs.SetInterspersed(false) // "run ./harness -x": -x is the harness's
	var ef envFlags
	var lf logFlags
	var iso isolationFlags
	var msgs listFlag
	ef.register(fs)
	lf.register(fs)
	iso.register(fs)
	fs.VarP(&msgs, "message", "m", "a turn's `message` (repeatable); without -m, stdin lines are turns")
	episodeID := fs.String("episode-id", "", "episode `id`")
	taskDir := fs.String("task", "", "run the Harbor task in `DIR`: its instruction is the first turn (unless -m), its tests grade the end; prints the reward")
	oracle := fs.Bool("oracle", false, "with --task: run the task's solution/solve.sh instead of an agent, then its tests")
	lf.level = "warn"
	if code, done := c.parse(args); done {
		return code
	}
	log, err := lf.logger(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd run:", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), drainSignals...)
	defer stop()
	defer dumpStacksOnQuit(log)()
	if *oracle {
		if *taskDir == "" {
			fmt.Fprintln(os.Stderr, "harnessd run: --oracle needs --task DIR")
			return exitUsage
		}
		return runOracle(ctx, *taskDir)
	}
	cfg, err := ef.build(fs.Args())
	if err == nil && *taskDir != "" {
		err = taskConfig(cfg, *taskDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd run:", err)
		return exitUsage
	}
	if code, refused := refuseUnrunnable(c, cfg, fs.NArg() > 0); refused {
		return code
	}
	sup, err := iso.supervisor(log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd run:", err)
		return exitMissing
	}
	defer sup.Close(context.Background(), 0)
	level, err := resolveIsolation(ctx, iso.level, cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd run:", err)
		return exitMissing
	}

	x, err := linked()
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd run:", err)
		return exitUsage
	}
	sess, err := session.NewSession(session.Options{Config: cfg, Adapters: x.adapters, Supervisor: sup, Logger: log,
		Isolation: level, Hide: daemonFiles(ef.config)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd run:", err)
		return exitUsage
	}
	defer sess.Close(context.Background())
	pr := newPrinter(os.Stderr)
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)

	obs, err := sess.Reset(ctx, session.ResetOptions{EpisodeID: *episodeID})
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd run: reset:", err)
		return exitFailure
	}
	pr.observation("reset", obs)
	last := obs
	next := messageSource(msgs)
	if *taskDir != "" && len(msgs) == 0 {
		next = messageSource([]string{""}) // the task's instruction
	}
	for !last.Done {
		msg, ok := next()
		if !ok {
			break
		}
		obs, err := sess.Step(ctx, wire.Action{Message: msg}, pr.event)
		if err != nil {
			fmt.Fprintln(os.Stderr, "harnessd run: step:", err)
			return exitFailure
		}
		pr.observation(fmt.Sprintf("turn %d", obs.Metadata.TurnNumber), obs)
		last = obs
	}
	if *taskDir != "" {
		return taskResult(last)
	}
	out.Encode(last)
	if last.Metadata.ErrorType != "" && last.Metadata.ErrorType != wire.FailureMaxTurns {
		return exitFailure
	}
	return exitOK
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
				return "", false
			}
			if line := sc.Text(); line != "" {
				return line, true
			}
		}
	}
}
