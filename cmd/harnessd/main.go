// Command harnessd turns a CLI agent into a reinforcement-learning
// environment: it serves OpenEnv's protocol over WebSocket and HTTP, runs
// one episode locally, or chats with a running server.
//
// Exit codes: 0 success (including a drained shutdown); 1 runtime failure;
// 2 usage or configuration error; 3 a required isolation mechanism is
// missing (check, serve --require).
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitMissing = 3
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

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
	return s + "\nRun 'harnessd <command> -h' for a command's flags.\n"
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage())
		os.Exit(exitUsage)
	}
	name := os.Args[1]
	switch name {
	case "-h", "--help", "help":
		fmt.Print(usage())
		return
	case "-v", "--version":
		name = "version"
	}
	c, ok := subcommands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "harnessd: unknown command %q\n\n%s", name, usage())
		os.Exit(exitUsage)
	}
	os.Exit(c.run(os.Args[2:]))
}
