// Command testharness is the scriptable test double of harnessd: a fake
// harness ("agent"), and helpers used by kill tests ("sleep", "detach").
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/harnessd/harnessd/testharness/agent"
)

const usage = `usage: testharness <command> [flags]

commands:
  agent    a scriptable fake harness (see testharness/README.md)
  sleep    sleep [--ignore-term] DURATION
  detach   start a setsid sleeper, print its pid, exit
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "agent":
		os.Exit(runAgent(os.Args[2:]))
	case "sleep":
		os.Exit(agent.RunSleep(os.Args[2:]))
	case "detach":
		os.Exit(agent.RunDetach())
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "testharness: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}

func runAgent(args []string) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	var o agent.Options
	protocol := fs.String("protocol", "jsonl", "wire protocol: jsonl")
	fs.DurationVar(&o.SlowStart, "slow-start", 0, "wait this long before announcing ready")
	fs.IntVar(&o.CrashOnStart, "crash-on-start", 0, "exit with this code before ready")
	fs.BoolVar(&o.NeverReady, "never-ready", false, "never announce ready")
	fs.BoolVar(&o.IgnoreTerm, "ignore-term", false, "ignore SIGTERM")
	fs.StringVar(&o.StartupStderr, "stderr", "", "write this line to stderr at start")
	fs.BoolVar(&o.NoisyStart, "noisy-start", false, "print a non-JSON line before ready")
	fs.StringVar(&o.MCPProtocol, "mcp-protocol", "", "MCP protocol version for tool calls")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch *protocol {
	case "jsonl":
		return agent.RunJSONL(o, os.Stdin, os.Stdout, os.Stderr)
	default:
		fmt.Fprintf(os.Stderr, "testharness agent: unknown protocol %q\n", *protocol)
		return 2
	}
}
