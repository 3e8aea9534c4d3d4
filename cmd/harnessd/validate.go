package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/episode/exposure"
	"github.com/harnessd/harnessd/episode/preflight"
	"github.com/harnessd/harnessd/harness/agents"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process"
)

func init() {
	register("validate", "check a configuration file without serving it: keys, programs, tool servers, rubric tools", runValidate)
}

func runValidate(args []string) int {
	c := newCLI("validate", "harnessd validate [flags] CONFIG\n\n"+
		"Loads CONFIG as serve would and reports every problem at once, one per line as CONFIG: KEY: CAUSE:\n"+
		"unknown or invalid keys; a harness program or tool server command that does not exist or is not\n"+
		"executable (a bare name is looked up on PATH, a relative path next to the config file); tool servers\n"+
		"that do not start or list their tools (each is started, asked for its tools, and stopped); a simulated\n"+
		"user's program its sandbox would not show; tool name conflicts; tool rubrics and events naming a\n"+
		"tool no server offers; and a mapped tool entry whose simulation and production servers differ (a side out\n"+
		"of reach that the mode does not serve is a warning, as at serve's start). No harness is started.\n\n"+
		"Exit codes: 0 valid; 2 a problem was found (or usage); 3 the process supervisor cannot be set up.")
	fs := c.fs
	var lf logFlags
	var iso isolationFlags
	mode := fs.String("mode", "", "simulation or production: the side of mapped tool servers checked as the one served (default: $OPENENV_MODE, else the configuration's mode:), as serve --mode")
	agentsDir := fs.String("agents-dir", "", "`directory` where agent programs are installed (for harness.agent; default $"+agents.DirEnvVar+")")
	var timeout string
	durationVar(fs, &timeout, "timeout", "60s", "how long the tool servers together may take to start and list their tools")
	lf.register(fs)
	lf.level = "error"
	iso.register(fs)
	if code, done := c.parse(args); done {
		return code
	}
	if fs.NArg() != 1 {
		return c.usageError("want one configuration file, got %d arguments", fs.NArg())
	}
	path := fs.Arg(0)
	log, err := lf.logger(os.Stderr)
	if err != nil {
		return c.usageError("%v", err)
	}
	d, err := units.ParseDuration(timeout)
	if err != nil || d <= 0 {
		return c.usageError("--timeout %q: want a positive duration such as 60s", timeout)
	}
	sup, err := iso.supervisor(log)
	if err != nil {
		return c.fail(exitMissing, "%v", err)
	}
	defer sup.Close(context.Background(), 0)
	ctx, stop := signal.NotifyContext(context.Background(), drainSignals...)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, d.D())
	defer cancel()

	m, from := modeFrom(*mode)
	v := validateConfig(ctx, path, m, from, *agentsDir, sup, log)
	for _, w := range v.warnings {
		fmt.Fprintf(os.Stderr, "%s: warning: %s\n", path, w)
	}
	if len(v.problems) > 0 {
		for _, p := range v.problems {
			fmt.Fprintf(os.Stderr, "%s: %s\n", path, p)
		}
		noun := "problems"
		if len(v.problems) == 1 {
			noun = "problem"
		}
		return c.fail(exitUsage, "%s: %d %s", path, len(v.problems), noun)
	}
	cfg := v.cfg
	fmt.Printf("%s: ok (%s)\n", path, describeConfig(cfg))
	// What runs on the host with the daemon's power over the harness's
	// data (tool servers declared isolation: host, or every tool server
	// in process isolation) is listed, so that it is a choice, not a
	// surprise (docs/security.md, side doors).
	for _, d := range cfg.SideDoors("") {
		fmt.Printf("%s: side door: %s\n", path, d)
	}
	for _, line := range cfg.DescribeEnvironmentSide(v.uncompared) {
		fmt.Printf("%s: %s\n", path, line)
	}
	for i := range cfg.Events {
		fmt.Printf("%s: event %d: %s\n", path, i, cfg.Events[i].Describe())
	}
	for _, l := range gradingNetworkNotes(cfg) {
		fmt.Printf("%s: %s\n", path, l)
	}
	return exitOK
}

// gradingNetworkNotes lists the tasks whose tests install tools at grading
// time, the command, and what their grader will have
// (tasks.Task.GradingNetworkNote).
func gradingNetworkNotes(cfg *config.Config) []string {
	var out []string
	if set := cfg.Taskset(); set != nil {
		for _, t := range set.Tasks() {
			if n := t.GradingNetworkNote(cfg.Network.EgressPolicy() == config.EgressAllow, cfg.Network.Allow); n != "" {
				out = append(out, fmt.Sprintf("task %s: %s", t.ID, n))
			}
		}
	}
	return out
}

// validation is what validate found in a configuration.
type validation struct {
	// cfg is the decoded configuration; nil when the file could not be
	// decoded.
	cfg *config.Config
	// problems make the configuration invalid: serve would refuse it or
	// an episode would fail on it. Each is "KEY: CAUSE".
	problems []string
	// warnings are what serve and run log at start and go on: a mapped
	// tool entry's side out of reach (production from a training
	// cluster), whose two servers were therefore not compared.
	warnings []string
	// uncompared names those mapped entries.
	uncompared []string
}

// validateConfig loads the configuration at path as serve would (mode,
// when not empty, as serve's --mode; modeFrom names where it came from,
// --mode or $OPENENV_MODE) and returns every problem and warning found.
func validateConfig(ctx context.Context, path, mode, modeFrom, agentsDir string, sup *process.Supervisor, log *slog.Logger) validation {
	var out []string
	cfg, err := config.LoadConfig(path)
	if err != nil {
		out = append(out, configErrorLines(path, err)...)
		if cfg == nil {
			return validation{problems: out}
		}
	}
	if mode != "" {
		// As serve's --mode (or $OPENENV_MODE): the side it serves.
		if err := cfg.SetMode(mode); err != nil {
			out = append(out, modeFrom+": "+err.Error())
		}
	}
	usable := true
	x, err := linked()
	if err != nil {
		out = append(out, err.Error())
		usable = false
	}
	if cfg.Harness.Agent != "" {
		if err := applyPreset(x.presets, cfg, agents.ApplyOptions{Dir: agentsDir}); err != nil {
			for _, p := range presetProblems(err) {
				if !slices.Contains(out, p) { // the model's url is the file's problem too
					out = append(out, p)
				}
			}
			usable = false
		} else if err := cfg.Normalize(); err != nil && len(out) == 0 {
			out = append(out, configErrorLines("", err)...)
		}
	} else if err := cfg.Harness.Model.CheckKey(nil); err != nil {
		out = append(out, err.Error()) // as serve and run refuse to start
	}
	if usable {
		if err := buildAdapter(x.adapters, &cfg.Harness.Config); err != nil {
			if msg := err.Error(); strings.HasPrefix(msg, "harness.") {
				out = append(out, msg) // it names its key
			} else {
				out = append(out, "harness: "+msg)
			}
		}
	}
	for _, p := range cfg.CheckPrograms() {
		out = append(out, p.String())
	}
	if why := recordDirProblem(cfg.RecordDir); why != "" {
		out = append(out, "record_dir: "+why)
	}
	if u := cfg.User; u != nil && len(u.Command) > 0 {
		// The user runs in a sandbox of its own, which hides what serve
		// hides (this configuration file among them).
		v := exposure.New(cfg, daemonFiles(path), episode.ResolveCommand, log)
		if why := v.SideUnseen(u.Command); why != "" {
			out = append(out, "user.command: in its sandbox "+why)
		}
	}
	for _, p := range preflight.CheckTools(ctx, cfg, sup, log) {
		out = append(out, p.String())
	}
	v := validation{cfg: cfg}
	mappings := preflight.CheckMappings(ctx, cfg, sup, log)
	for _, p := range mappings.Mismatches {
		out = append(out, p.String())
	}
	for _, u := range mappings.Unreachable {
		if u.Side == cfg.EffectiveMode() {
			continue // the side the mode serves: a tool server that does not start, reported by CheckTools
		}
		v.warnings = append(v.warnings, u.String()+" (not compared; serve and run warn likewise and go on)")
	}
	if abs, err := filepath.Abs(path); err == nil {
		for _, p := range cfg.RelativeHarnessArgs(filepath.Dir(abs), "next to the configuration") {
			v.warnings = append(v.warnings, p.String()+" (serve and run warn likewise and go on)")
		}
	}
	v.problems, v.uncompared = out, mappings.Uncompared
	return v
}

// presetProblems is one line per problem of applyPreset, each named by
// its key: harness.agent unless it names its own (harness.model.*).
func presetProblems(err error) []string {
	ps := problems{err}
	errors.As(err, &ps)
	var out []string
	for _, p := range ps {
		s := p.Error()
		if !strings.HasPrefix(s, "harness.") {
			s = "harness.agent: " + s
		}
		out = append(out, s)
	}
	return out
}

// configErrorLines splits a LoadConfig error (problems joined by newlines,
// the first prefixed with the path; YAML's unknown keys listed under a
// heading) into one line per problem.
func configErrorLines(path string, err error) []string {
	if lines, ok := taskErrorLines(path, err); ok {
		return lines
	}
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimPrefix(l, path+": ")
		l = strings.TrimPrefix(l, "config: ")
		l = strings.TrimSpace(l)
		if l != "" && l != "yaml: unmarshal errors:" {
			out = append(out, l)
		}
	}
	return out
}

// describeConfig summarizes a valid configuration in one line.
func describeConfig(cfg *config.Config) string {
	prog := "?"
	if len(cfg.Harness.Command) > 0 {
		prog = cfg.Harness.Command[0]
	}
	adapter := cfg.Harness.Adapter
	if cfg.Harness.Agent != "" {
		adapter = "agent " + cfg.Harness.Agent
	}
	s := fmt.Sprintf("harness %s via %s, %d tool server(s), %d rubric(s)", prog, adapter, len(cfg.Tools), len(cfg.Rubrics))
	if set := cfg.Taskset(); set != nil {
		s += fmt.Sprintf(", %d task(s)", set.Len())
	}
	return s
}

// warnRelativeArgs logs, at serve's and run's start, each argument of the
// harness command that names a file here but nothing in the episode's
// workspace, where the harness runs (config.RelativeHarnessArgs).
// configPath is --config; fromArgs says the command came after "--".
func warnRelativeArgs(log *slog.Logger, cfg *config.Config, configPath string, fromArgs bool) {
	dir, where := "", "in the current directory"
	if fromArgs || configPath == "" {
		dir, _ = os.Getwd()
	} else if abs, err := filepath.Abs(configPath); err == nil {
		dir, where = filepath.Dir(abs), "next to the configuration"
	}
	for _, p := range cfg.RelativeHarnessArgs(dir, where) {
		key := p.Key
		if fromArgs {
			key = `an argument of the harness command (after "--")`
		}
		log.Warn("a harness argument names a file here but nothing in the episode's workspace, where the harness runs: "+p.Cause, "key", key)
	}
}

// refuseUnrunnable is serve's and run's start-up check: when the harness
// program or a tool server's command does not resolve or is not
// executable, it returns one problem per program, naming it and the knob.
// fromArgs says the harness command came after "--" rather than from
// harness.command.
func refuseUnrunnable(cfg *config.Config, fromArgs bool) error {
	var out problems
	for _, p := range cfg.CheckPrograms() {
		if fromArgs && p.Key == "harness.command" {
			p.Key = `the harness command (after "--")`
		}
		out = append(out, fmt.Errorf("refusing to start: %s", p))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// recordDirProblem says why serve and run could not make or write the
// record directory dir ("" when they could, as far as can be told without
// making it): a file in its way, or its nearest existing directory not
// writable by this user (a read-only file system among the reasons).
func recordDirProblem(dir string) string {
	if dir == "" {
		return ""
	}
	at := dir
	for {
		fi, err := os.Stat(at)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Sprintf("%s is not a directory", at)
		case err == nil:
			if err := unix.Access(at, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Sprintf("%s is not writable here: %v", at, err)
			}
			return ""
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR): // ENOTDIR: a file further up, found next
			return err.Error()
		}
		parent := filepath.Dir(at)
		if parent == at {
			return ""
		}
		at = parent
	}
}
