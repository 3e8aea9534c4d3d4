// Command testharness is harnessd's scriptable test double. Each subcommand
// lives in its own file and registers itself in commands.
package main

import (
	"fmt"
	"os"
	"sort"
)

// command is one subcommand: run gets the arguments after its name and
// returns the exit code.
type command struct {
	summary string
	run     func(args []string) int
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string) int) {
	commands[name] = command{summary: summary, run: run}
}

func usage() string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	s := "usage: testharness <command> [flags]\n\ncommands:\n"
	for _, n := range names {
		s += fmt.Sprintf("  %-8s %s\n", n, commands[n].summary)
	}
	return s
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage())
		os.Exit(2)
	}
	name := os.Args[1]
	if name == "-h" || name == "--help" || name == "help" {
		fmt.Print(usage())
		return
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "testharness: unknown command %q\n%s", name, usage())
		os.Exit(2)
	}
	os.Exit(c.run(os.Args[2:]))
}
