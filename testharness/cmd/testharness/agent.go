package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/harnessd/harnessd/testharness/agent"
	"github.com/harnessd/harnessd/testharness/agent/acp"
	"github.com/harnessd/harnessd/testharness/agent/frontend"
	"github.com/harnessd/harnessd/testharness/agent/jsonl"
	"github.com/harnessd/harnessd/testharness/agent/oneshot"
	"github.com/harnessd/harnessd/testharness/agent/streamjson"
	"github.com/harnessd/harnessd/testharness/agent/tui"
)

func init() {
	register("agent", "a scriptable fake harness (see testharness/README.md)", runAgent)
	register("sleep", "sleep [--ignore-term] DURATION (a grandchild for kill tests)", agent.RunSleep)
	register("attack", "attack NAME [ARGS]: one adversarial attack, its outcome as a JSON line (see testharness/README.md)", agent.RunAttackCommand)
	register("detach", "start a setsid sleeper, print its pid, exit (--scrub: empty environment; --linger D)", agent.RunDetach)
}

// agentFlags are the agent command's flags: the start-up behaviours every
// front end shares and each front end's own. Every flag is accepted with
// every protocol (a front end ignores another's), except the stream-json
// ones, which are refused elsewhere.
type agentFlags struct {
	common     frontend.Options
	jsonl      jsonl.Options
	acp        acp.Options
	streamJSON streamjson.Options
	tui        tui.Options
	oneshot    oneshot.Options
}

// frontEnd runs the agent over one wire protocol with the parsed flags
// until its input ends and returns the process exit code.
type frontEnd func(f *agentFlags, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int

// protocols maps --protocol names to the front ends.
var protocols = map[string]frontEnd{
	"jsonl": func(f *agentFlags, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
		f.jsonl.Options = f.common
		return jsonl.Run(f.jsonl, stdin, stdout, stderr)
	},
	"acp": func(f *agentFlags, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
		f.acp.Options = f.common
		return acp.Run(f.acp, stdin, stdout, stderr)
	},
	"stream-json": func(f *agentFlags, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
		f.streamJSON.Options = f.common
		return streamjson.Run(f.streamJSON, stdin, stdout, stderr)
	},
	"tui": func(f *agentFlags, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
		f.tui.Options = f.common
		return tui.Run(f.tui, stdin, stdout, stderr)
	},
	"oneshot": func(f *agentFlags, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
		f.oneshot.Options = f.common
		return oneshot.Run(f.oneshot, stdin, stdout, stderr)
	},
}

// protocolNames lists the protocols in order.
func protocolNames() []string {
	names := make([]string, 0, len(protocols))
	for n := range protocols {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func runAgent(args []string) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	var f agentFlags
	o := &f.common
	protocol := fs.String("protocol", "jsonl", fmt.Sprintf("wire protocol: %v", protocolNames()))
	fs.DurationVar(&o.SlowStart, "slow-start", 0, "wait this long before announcing ready")
	fs.IntVar(&o.CrashOnStart, "crash-on-start", 0, "exit with this code before ready")
	fs.BoolVar(&o.NeverReady, "never-ready", false, "never announce ready")
	fs.BoolVar(&o.IgnoreTerm, "ignore-term", false, "ignore SIGTERM")
	fs.StringVar(&o.StartupStderr, "stderr", "", "write this line to stderr at start")
	fs.BoolVar(&o.NoisyStart, "noisy-start", false, "print a non-JSON line before ready")
	fs.StringVar(&o.MCPProtocol, "mcp-protocol", "", "MCP protocol version for tool calls")
	fs.BoolVar(&f.jsonl.NoFork, "no-fork", false, "jsonl: ignore fork messages (answer nothing)")
	fs.BoolVar(&f.jsonl.ForkRefuse, "fork-refuse", false, "jsonl: answer fork and restore with an error event")
	fs.BoolVar(&f.jsonl.ForkNoise, "fork-noise", false, "jsonl: write a text_output event before answering fork or restore")
	streamjson.RegisterFlags(fs, &f.streamJSON.Flags)
	fs.BoolVar(&f.acp.IgnoreEOF, "ignore-eof", false, "acp: keep running after stdin ends")
	fs.BoolVar(&f.acp.NoHTTP, "acp-no-http", false, "acp: advertise mcpCapabilities.http false")
	fs.BoolVar(&f.acp.PromptQueueing, "acp-prompt-queueing", false, "acp: advertise promptQueueing and take a session/prompt sent during a turn into it")
	fs.StringVar(&f.acp.Auth, "acp-auth", "", "acp: require authenticate with this method id before session/new")
	fs.StringVar(&f.oneshot.SessionDir, "session-dir", "", "oneshot: directory of saved sessions (default $HOME/.testharness/sessions)")
	fs.StringVar(&f.oneshot.Resume, "resume", "", "oneshot: continue this session id")
	fs.StringVar(&f.oneshot.Format, "format", "", "oneshot: output format: jsonl (default), text, codex, gemini, opencode")
	fs.IntVar(&f.tui.NoPromptAfter, "no-prompt-after", 0, "tui: stop printing the prompt after N turns")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if given := streamjson.FlagsGiven(fs); *protocol != "stream-json" && len(given) > 0 {
		fmt.Fprintf(os.Stderr, "testharness agent: %v apply to --protocol stream-json only\n", given)
		return 2
	}
	f.oneshot.Args = fs.Args()
	run, ok := protocols[*protocol]
	if !ok {
		fmt.Fprintf(os.Stderr, "testharness agent: unknown protocol %q (have %v)\n", *protocol, protocolNames())
		return 2
	}
	return run(&f, os.Stdin, os.Stdout, os.Stderr)
}
