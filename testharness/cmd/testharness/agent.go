package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/harnessd/harnessd/testharness/agent"
)

func init() {
	register("agent", "a scriptable fake harness (see testharness/README.md)", runAgent)
	register("sleep", "sleep [--ignore-term] DURATION (a grandchild for kill tests)", agent.RunSleep)
	register("attack", "attack NAME [ARGS]: one adversarial attack, its outcome as a JSON line (see testharness/README.md)", agent.RunAttackCommand)
	register("detach", "start a setsid sleeper, print its pid, exit (--scrub: empty environment; --linger D)", agent.RunDetach)
}

func runAgent(args []string) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	var o agent.Options
	protocol := fs.String("protocol", "jsonl", fmt.Sprintf("wire protocol: %v", agent.ProtocolNames()))
	fs.DurationVar(&o.SlowStart, "slow-start", 0, "wait this long before announcing ready")
	fs.IntVar(&o.CrashOnStart, "crash-on-start", 0, "exit with this code before ready")
	fs.BoolVar(&o.NeverReady, "never-ready", false, "never announce ready")
	fs.BoolVar(&o.IgnoreTerm, "ignore-term", false, "ignore SIGTERM")
	fs.StringVar(&o.StartupStderr, "stderr", "", "write this line to stderr at start")
	fs.BoolVar(&o.NoisyStart, "noisy-start", false, "print a non-JSON line before ready")
	fs.StringVar(&o.MCPProtocol, "mcp-protocol", "", "MCP protocol version for tool calls")
	agent.RegisterStreamJSONFlags(fs, &o.StreamJSON)
	fs.BoolVar(&o.IgnoreEOF, "ignore-eof", false, "acp: keep running after stdin ends")
	fs.BoolVar(&o.ACPNoHTTP, "acp-no-http", false, "acp: advertise mcpCapabilities.http false")
	fs.StringVar(&o.ACPAuth, "acp-auth", "", "acp: require authenticate with this method id before session/new")
	fs.StringVar(&o.SessionDir, "session-dir", "", "oneshot: directory of saved sessions (default $HOME/.testharness/sessions)")
	fs.StringVar(&o.Resume, "resume", "", "oneshot: continue this session id")
	fs.StringVar(&o.Format, "format", "", "oneshot: output format: jsonl (default), text, codex, gemini, opencode")
	fs.IntVar(&o.NoPromptAfter, "no-prompt-after", 0, "tui: stop printing the prompt after N turns")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if given := agent.StreamJSONFlagsGiven(fs); *protocol != "stream-json" && len(given) > 0 {
		fmt.Fprintf(os.Stderr, "testharness agent: %v apply to --protocol stream-json only\n", given)
		return 2
	}
	o.Args = fs.Args()
	run, ok := agent.Protocols[*protocol]
	if !ok {
		fmt.Fprintf(os.Stderr, "testharness agent: unknown protocol %q (have %v)\n", *protocol, agent.ProtocolNames())
		return 2
	}
	return run(o, os.Stdin, os.Stdout, os.Stderr)
}
