package streamjson

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Flags are the Claude Code (and Qwen Code) command-line flags the
// stream-json front end reads or accepts and ignores, so that an adapter can
// pass the flags it would pass to the real agent.
type Flags struct {
	Print                  bool     // -p / --print
	Verbose                bool     // --verbose
	InputFormat            string   // --input-format (must be stream-json)
	OutputFormat           string   // --output-format (must be stream-json)
	MCPConfig              []string // --mcp-config (inline JSON or file; repeatable)
	StrictMCPConfig        bool     // --strict-mcp-config
	PermissionMode         string   // --permission-mode (reported in system/init)
	ApprovalMode           string   // --approval-mode (Qwen; reported like permission mode)
	Model                  string   // --model (reported in system/init)
	IncludePartialMessages bool     // --include-partial-messages (adds stream_event lines)
	SessionID              string   // --session-id
	NoInitialize           bool     // --no-initialize: never answer the initialize control request
	QueueMidTurn           bool     // fake only: take a user line written during a turn into it
}

// flagNames lists every flag RegisterFlags defines.
var flagNames []string

// multiFlag collects a repeatable string flag.
type multiFlag struct{ v *[]string }

func (m multiFlag) String() string {
	if m.v == nil {
		return ""
	}
	return strings.Join(*m.v, " ")
}

func (m multiFlag) Set(s string) error { *m.v = append(*m.v, s); return nil }

// ignoredFlag accepts a flag with a value and ignores it.
type ignoredFlag struct{}

func (ignoredFlag) String() string { return "" }

func (ignoredFlag) Set(string) error { return nil }

// ignoredBool accepts a boolean flag and ignores it.
type ignoredBool struct{ ignoredFlag }

func (ignoredBool) IsBoolFlag() bool { return true }

// RegisterFlags defines the Claude/Qwen flags on fs. The agent
// command registers them for every protocol and rejects them unless the
// protocol is stream-json (see FlagsGiven).
func RegisterFlags(fs *flag.FlagSet, f *Flags) {
	def := func(name string) { flagNames = append(flagNames, name) }
	for _, n := range []string{"p", "print"} {
		fs.BoolVar(&f.Print, n, false, "Claude Code: print mode (accepted)")
		def(n)
	}
	fs.BoolVar(&f.Verbose, "verbose", false, "Claude Code: required with -p and stream-json output")
	fs.StringVar(&f.InputFormat, "input-format", "", "Claude Code: must be stream-json")
	fs.StringVar(&f.OutputFormat, "output-format", "", "Claude Code: must be stream-json")
	fs.Var(multiFlag{&f.MCPConfig}, "mcp-config", "Claude Code: MCP servers, inline JSON or a file (repeatable)")
	fs.BoolVar(&f.StrictMCPConfig, "strict-mcp-config", false, "Claude Code: only --mcp-config servers (accepted)")
	fs.StringVar(&f.PermissionMode, "permission-mode", "", "Claude Code: permission mode, reported in system/init")
	fs.StringVar(&f.ApprovalMode, "approval-mode", "", "Qwen Code: approval mode, reported in system/init")
	fs.StringVar(&f.Model, "model", "", "Claude Code: model name, reported in system/init")
	fs.BoolVar(&f.IncludePartialMessages, "include-partial-messages", false, "Claude Code: emit stream_event lines")
	fs.StringVar(&f.SessionID, "session-id", "", "Claude Code: session id")
	fs.BoolVar(&f.NoInitialize, "no-initialize", false, "fake only: never answer the initialize control request")
	fs.BoolVar(&f.QueueMidTurn, "queue-mid-turn", false, "fake only: a user line during a turn joins it (waitevent) and gets a result line of its own after the turn's")
	for _, n := range []string{"verbose", "input-format", "output-format", "mcp-config", "strict-mcp-config",
		"permission-mode", "approval-mode", "model", "include-partial-messages", "session-id", "no-initialize", "queue-mid-turn"} {
		def(n)
	}
	// Accepted and ignored.
	for _, n := range []string{"dangerously-skip-permissions", "yolo", "replay-user-messages",
		"no-session-persistence", "bare"} {
		fs.Var(ignoredBool{}, n, "Claude/Qwen: accepted and ignored")
		def(n)
	}
	for _, n := range []string{"exclude-tools", "allowedTools", "disallowedTools", "allowed-tools",
		"append-system-prompt", "system-prompt", "auth-type", "max-budget-usd", "fallback-model",
		"setting-sources", "settings", "tools"} {
		fs.Var(ignoredFlag{}, n, "Claude/Qwen: accepted and ignored")
		def(n)
	}
}

// FlagsGiven returns the stream-json flags set on a parsed fs.
func FlagsGiven(fs *flag.FlagSet) []string {
	own := map[string]bool{}
	for _, n := range flagNames {
		own[n] = true
	}
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if own[f.Name] {
			given = append(given, "--"+f.Name)
		}
	})
	return given
}

// check reports flag combinations the real Claude Code refuses.
func (f *Flags) check() error {
	if f.InputFormat != "stream-json" {
		return fmt.Errorf("Error: --input-format must be stream-json for this agent (got %q)", f.InputFormat)
	}
	if f.OutputFormat != "stream-json" {
		return fmt.Errorf("Error: --output-format must be stream-json for this agent (got %q)", f.OutputFormat)
	}
	if f.Print && !f.Verbose {
		return errors.New("Error: When using --print, --output-format=stream-json requires --verbose")
	}
	return nil
}

// mcpServer is one server of an --mcp-config, in either dialect: Claude's
// {"type":"http","url","headers"} or Qwen/Gemini's {"httpUrl","headers"}.
type mcpServer struct {
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	HTTPURL string            `json:"httpUrl"`
	Headers map[string]string `json:"headers"`
	Command string            `json:"command"`
}

// endpoint returns the server's streamable-HTTP URL.
func (s mcpServer) endpoint() (string, error) {
	switch {
	case s.HTTPURL != "":
		return s.HTTPURL, nil
	case s.URL != "" && (s.Type == "http" || s.Type == ""):
		return s.URL, nil
	case s.Command != "" || s.Type == "stdio":
		return "", errors.New("stdio servers are not supported by the fake agent")
	default:
		return "", fmt.Errorf("unsupported server (type %q, no url or httpUrl)", s.Type)
	}
}

// parseMCPConfigs merges the --mcp-config values: each is inline JSON (when
// it starts with "{") or a file path holding {"mcpServers":{...}}.
func parseMCPConfigs(values []string) (map[string]mcpServer, error) {
	servers := map[string]mcpServer{}
	for _, v := range values {
		raw := []byte(strings.TrimSpace(v))
		if len(raw) == 0 || raw[0] != '{' {
			b, err := os.ReadFile(v)
			if err != nil {
				return nil, fmt.Errorf("--mcp-config: %w", err)
			}
			raw = b
		}
		var doc struct {
			MCPServers map[string]mcpServer `json:"mcpServers"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("--mcp-config: invalid JSON: %w", err)
		}
		if doc.MCPServers == nil {
			return nil, errors.New(`--mcp-config: missing "mcpServers"`)
		}
		for name, s := range doc.MCPServers {
			if _, err := s.endpoint(); err != nil {
				return nil, fmt.Errorf("--mcp-config: server %q: %w", name, err)
			}
			servers[name] = s
		}
	}
	return servers, nil
}

// sortedNames returns the server names in order.
func sortedNames(servers map[string]mcpServer) []string {
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
