package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode/preflight"
	"github.com/harnessd/harnessd/process"
)

// exitError is an error that ends a command with its own exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode gives err (when not nil) the exit code code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// problems are errors reported one line each.
type problems []error

func (p problems) Error() string { return errors.Join(p...).Error() }

// exit reports err on stderr ("harnessd NAME: ...", a line per problem)
// and returns its exit code: exitOK for nil, the code it carries, else
// exitFailure.
func (c *cli) exit(err error) int {
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	var ps problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Fprintf(os.Stderr, "harnessd %s: %v\n", c.name, p)
		}
		return code
	}
	fmt.Fprintf(os.Stderr, "harnessd %s: %v\n", c.name, err)
	return code
}

// setupFlags are the flags serve and run share: the environment, logging
// and isolation.
type setupFlags struct {
	env envFlags
	log logFlags
	iso isolationFlags
}

func (f *setupFlags) register(fs *pflag.FlagSet) {
	f.env.register(fs)
	f.log.register(fs)
	f.iso.register(fs)
}

// logger is the command's logger on stderr; its error is a usage error.
func (f *setupFlags) logger() (*slog.Logger, error) {
	log, err := f.log.logger(os.Stderr)
	return log, withCode(exitUsage, err)
}

// daemon is what serve and run start from: the configuration, the linked
// adapters and presets, the process supervisor and the isolation level.
type daemon struct {
	cfg       *config.Config
	x         *extensions
	sup       *process.Supervisor
	isolation string
}

// setupOptions are what serve and run ask of setup beyond the flags.
type setupOptions struct {
	// args is the harness command after "--".
	args []string
	// adjust, when set, completes the configuration (run --task).
	adjust func(*config.Config) error
	// require names the mechanisms that must be present (serve --require).
	require []string
	// cfg, when set, is the configuration, built already (eval's agents').
	cfg *config.Config
}

// setup is serve's and run's shared start-up: it builds the configuration
// (file, then flags), refuses a harness or tool program that cannot run,
// checks the required mechanisms, starts the process supervisor and
// resolves the isolation level. The caller closes d.sup.
func (f *setupFlags) setup(ctx context.Context, log *slog.Logger, o setupOptions) (*daemon, error) {
	cfg, err := o.cfg, error(nil)
	if cfg == nil {
		cfg, err = f.env.build(o.args)
	}
	if err == nil && o.adjust != nil {
		err = o.adjust(cfg)
	}
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	if err := refuseUnrunnable(cfg, len(o.args) > 0); err != nil {
		return nil, withCode(exitUsage, f.env.knobs.nameFlags(err))
	}
	warnRelativeArgs(log, cfg, f.env.config, len(o.args) > 0)
	x, err := linked()
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	if len(o.require) > 0 && !requirementsMet(log, &f.iso, o.require) {
		return nil, withCode(exitMissing, errors.New("refusing to start: a required mechanism is missing (the log names it; harnessd check shows them all)"))
	}
	sup, err := f.iso.supervisor(log)
	if err != nil {
		return nil, withCode(exitMissing, err)
	}
	if ps := preflight.CheckMappingsAtStart(ctx, cfg, sup, log); len(ps) > 0 {
		sup.Close(context.Background(), 0)
		return nil, withCode(exitUsage, problems(ps))
	}
	level, err := resolveIsolation(ctx, f.iso.level, cfg, log)
	if err != nil {
		sup.Close(context.Background(), 0)
		return nil, withCode(exitMissing, err)
	}
	mech := sup.Mechanisms()
	log.Info("process isolation", "isolation", level, "kill_mode", mech.KillMode(), "peer_check", mech.PeerCheck, "cgroup", mech.CgroupPath, "pid1", mech.PID1, "notes", mech.Notes)
	return &daemon{cfg: cfg, x: x, sup: sup, isolation: level}, nil
}
