// Command harnessd turns a CLI agent into a reinforcement-learning
// environment: it serves OpenEnv's protocol over WebSocket and HTTP, runs
// one episode locally, or chats with a running server. It is built to be a
// container's entrypoint (PID 1); docs/deploy.md covers containers and
// Kubernetes.
//
// This package owns the command line and nothing below it: each command's
// flags and help, the one table binding flags to configuration keys
// (knobs.go; the defaults and validation stay in package config), the
// start-up serve and run share (setup.go: configuration, program check,
// supervisor, isolation), which adapters and presets the binary links
// (adapters.go), exit codes and signals. Episodes are package session's,
// the protocol package server's, evaluation jobs package evaljob's.
//
// The package is bigger than 3,000 lines: it is one file per command, each
// with its flags and help text, and the command line is the one place
// they can live (what they call is in the packages below).
//
// Exit codes (the same for every command; docs/deploy.md repeats them):
//
//	0  success; for serve, a drained shutdown after SIGTERM, SIGINT or SIGHUP
//	1  runtime failure: the listener failed, a drain overran --drain-timeout
//	   or was cut short by a second signal, an episode of run failed, a
//	   probe of check failed, a server was not healthy (health), a trial
//	   of eval could not run to a reward or the job was interrupted
//	2  usage or configuration error: bad flags, an invalid config file, a
//	   harness program or tool server command that does not exist or is
//	   not executable (serve and run refuse to start), a problem found by
//	   validate
//	3  a required isolation mechanism is missing: check --require,
//	   serve --require, --cgroup required, --subreaper required
//
// Signals (serve; run ends its episode on the same ones and exits 1):
//
//	SIGTERM, SIGINT, SIGHUP  drain: /ready turns 503 at once (/health stays
//	                         200), no new sessions or turns, running turns
//	                         finish (--drain-policy finish) or are cancelled
//	                         (cancel), every session ends (its harness tree
//	                         gets SIGTERM, the stop grace, then SIGKILL; tool
//	                         servers likewise), sockets close with "going
//	                         away", the listener closes last; exit 0
//	a second one, or a drain longer than --drain-timeout
//	                         kill every process tree at once; exit 1
//	SIGQUIT                  write every goroutine's stack to stderr and keep
//	                         running
//
// Each has a handler, so all of them work when harnessd is PID 1, where the
// kernel discards signals left at their default action. As PID 1 harnessd
// also reaps every orphan re-parented to it.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/harnessd/harnessd/process/sandbox"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitMissing = 3
)

type subcommand struct {
	summary string
	run     func(args []string) int
}

var subcommands = map[string]subcommand{}

func register(name, summary string, run func(args []string) int) {
	subcommands[name] = subcommand{summary: summary, run: run}
}

func usage() string {
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		if !strings.HasPrefix(n, "_") { // internal (probe children)
			names = append(names, n)
		}
	}
	sort.Strings(names)
	s := "harnessd turns a CLI agent into a reinforcement-learning environment.\n\nusage: harnessd <command> [flags]\n\ncommands:\n"
	for _, n := range names {
		s += fmt.Sprintf("  %-8s %s\n", n, subcommands[n].summary)
	}
	return s + "\nRun 'harnessd <command> --help' (or 'harnessd help <command>') for a command's flags.\n"
}

func main() {
	// A re-executed sandbox init never returns from here.
	sandbox.Init()
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage())
		os.Exit(exitUsage)
	}
	name := os.Args[1]
	switch name {
	case "-h", "--help", "help":
		if len(os.Args) > 2 && name == "help" {
			c, ok := subcommands[os.Args[2]]
			if !ok {
				fmt.Fprintf(os.Stderr, "harnessd help: unknown command %q\nRun 'harnessd --help' for the commands.\n", os.Args[2])
				os.Exit(exitUsage)
			}
			os.Exit(c.run([]string{"--help"}))
		}
		fmt.Print(usage())
		return
	case "-v", "--version":
		name = "version"
	}
	c, ok := subcommands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "harnessd: unknown command %q\nRun 'harnessd --help' for the commands.\n", name)
		os.Exit(exitUsage)
	}
	os.Exit(c.run(os.Args[2:]))
}
